package store

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/durable"
)

// proofsCheckedFile records, per session, the size and modification time
// of its proof journal when Sync last found every proof in it verifying, so
// that a Sync verifies again only the journals that changed since: a proof
// damaged on disk (an edit, a bad sector, a restore) is found by the next
// Sync and fetched again, and an unchanged journal costs a stat.
const proofsCheckedFile = "proofs.checked"

type checkedStat struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime_ns"`
}

func (s *Store) loadChecked() map[string]checkedStat {
	m := make(map[string]checkedStat)
	if data, err := readFileMax(filepath.Join(s.dir, proofsCheckedFile), 16<<20); err == nil {
		json.Unmarshal(data, &m)
	}
	return m
}

func (s *Store) proofStat(name string) (checkedStat, bool) {
	fi, err := os.Stat(s.proofJournalPath(name))
	if err != nil {
		return checkedStat{}, false
	}
	return checkedStat{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, true
}

// checkProofs verifies the stored proofs of every session whose proof
// journal changed since it was last found good (every session with all),
// and returns the sessions found good and the receipts whose stored proof
// does not verify under v for the issuer key pub: to be fetched again.
func (s *Store) checkProofs(v *c2sp.ProofVerifier, pub ed25519.PublicKey, all bool) (clean []string, bad []Unproven, err error) {
	names, err := s.Sessions()
	if err != nil {
		return nil, nil, err
	}
	checked := s.loadChecked()
	for _, name := range names {
		st, ok := s.proofStat(name)
		if !ok {
			continue // no proofs yet
		}
		if !all && checked[name] == st {
			clean = append(clean, name)
			continue
		}
		set, err := s.Proofs(name)
		if err != nil {
			return nil, nil, err
		}
		chain, err := s.Receipts(name)
		if err != nil {
			return nil, nil, err
		}
		good := true
		for _, r := range chain {
			seq, err := sequenceOf(r)
			if err != nil {
				continue
			}
			p, ok := set.Get(seq)
			if !ok {
				continue
			}
			if _, err := v.VerifyReceipt(pub, r, p); err != nil {
				good = false
				bad = append(bad, Unproven{Ref: Ref{Session: name, Sequence: seq}, Receipt: r})
			}
		}
		if good {
			clean = append(clean, name)
		}
	}
	return clean, bad, nil
}

// recordChecked records the proof journals of the sessions as they are now
// as good: Sync calls it once the proofs it stored (each verified before
// it was stored) are in them. It is a cache: failing to write it costs
// the next Sync a verification.
func (s *Store) recordChecked(sessions []string) {
	checked := s.loadChecked()
	changed := false
	for _, name := range sessions {
		if st, ok := s.proofStat(name); ok && checked[name] != st {
			checked[name], changed = st, true
		}
	}
	if !changed {
		return // a no-op sync writes nothing
	}
	if data, err := json.Marshal(checked); err == nil {
		durable.WriteFile(filepath.Join(s.dir, proofsCheckedFile), data, 0o600)
	}
}
