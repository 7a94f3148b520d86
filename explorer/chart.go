package explorer

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"time"

	"github.com/transparency-dev/formats/proof"
)

// A chart is an SVG bar chart drawn on the server: rectangles and labels
// placed here, so that the page needs no script.
type chart struct {
	W, H   int
	Title  string
	Bars   []bar
	Labels []label
	Empty  bool
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type label struct {
	X, Y   float64
	Text   string
	Anchor string
}

// outcomes in the order bars stack them, bottom first.
var outcomes = []string{"allow", "ask", "deny"}

// hourlyChart charts the decisions per hour by outcome over the chartHours
// hours up to the latest decision, of one issuer (or all when issuer is 0).
func (e *Explorer) hourlyChart(ctx context.Context, issuer int64) (*chart, error) {
	c := &chart{W: 760, H: 180, Title: "Decisions per hour by outcome"}
	// Two forms of each query, so that each reads its index (the hourly
	// table's key, or hourly_issuer) and not the whole table.
	var last int64
	var err error
	if issuer == 0 {
		err = e.idx.db.QueryRowContext(ctx, `SELECT coalesce(max(hour), 0) FROM hourly`).Scan(&last)
	} else {
		err = e.idx.db.QueryRowContext(ctx, `SELECT coalesce(max(hour), 0) FROM hourly WHERE issuer = ?`, issuer).Scan(&last)
	}
	if err != nil {
		return nil, err
	}
	if last == 0 {
		c.Empty = true
		return c, nil
	}
	first := last - chartHours + 1
	var rows *sql.Rows
	if issuer == 0 {
		rows, err = e.idx.db.QueryContext(ctx, `SELECT hour, outcome, sum(n) FROM hourly WHERE hour >= ? GROUP BY hour, outcome`, first)
	} else {
		rows, err = e.idx.db.QueryContext(ctx, `SELECT hour, outcome, n FROM hourly WHERE issuer = ? AND hour >= ?`, issuer, first)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := make([]map[string]int64, chartHours)
	var top int64
	for rows.Next() {
		var h, n int64
		var o string
		if err := rows.Scan(&h, &o, &n); err != nil {
			return nil, err
		}
		m := counts[h-first]
		if m == nil {
			m = map[string]int64{}
			counts[h-first] = m
		}
		m[o] += n
		top = max(top, m["allow"]+m["ask"]+m["deny"]+m["other"])
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	const left, bottom, topPad = 50.0, 30.0, 10.0
	plotW, plotH := float64(c.W)-left-10, float64(c.H)-bottom-topPad
	slot := plotW / chartHours
	for i, m := range counts {
		hour := time.Unix((first+int64(i))*3600, 0).UTC().Format("2006-01-02 15:00Z")
		y := topPad + plotH
		for _, o := range append(outcomes, "other") {
			n := m[o]
			if n == 0 {
				continue
			}
			h := plotH * float64(n) / float64(top)
			y -= h
			c.Bars = append(c.Bars, bar{X: left + float64(i)*slot + 1, Y: y, W: slot - 2, H: h, Class: "bar-" + o,
				Title: fmt.Sprintf("%s: %d %s", hour, n, o)})
		}
	}
	c.Labels = []label{
		{X: left - 6, Y: topPad + 8, Text: fmt.Sprint(top), Anchor: "end"},
		{X: left - 6, Y: topPad + plotH, Text: "0", Anchor: "end"},
		{X: left, Y: float64(c.H) - 10, Text: time.Unix(first*3600, 0).UTC().Format("Jan 2 15:00Z"), Anchor: "start"},
		{X: left + plotW/2, Y: float64(c.H) - 10, Text: time.Unix((first+chartHours/2)*3600, 0).UTC().Format("Jan 2 15:00Z"), Anchor: "middle"},
		{X: left + plotW, Y: float64(c.H) - 10, Text: time.Unix(last*3600, 0).UTC().Format("Jan 2 15:00Z"), Anchor: "end"},
	}
	return c, nil
}

// issuerChart charts the decisions of the issuers with the most entries,
// one horizontal bar each, by outcome.
func issuerChart(issuers []issuerRow) *chart {
	c := &chart{W: 760, H: 12 + 26*len(issuers), Title: "Decisions per issuer by outcome"}
	var top int64
	for _, is := range issuers {
		top = max(top, is.Allow+is.Ask+is.Deny)
	}
	if top == 0 {
		c.Empty = true
		return c
	}
	const left = 190.0
	plotW := float64(c.W) - left - 60
	for i, is := range issuers {
		y := 10 + 26*float64(i)
		x := left
		for _, o := range outcomes {
			n := map[string]int64{"allow": is.Allow, "ask": is.Ask, "deny": is.Deny}[o]
			if n == 0 {
				continue
			}
			w := plotW * float64(n) / float64(top)
			c.Bars = append(c.Bars, bar{X: x, Y: y, W: w, H: 18, Class: "bar-" + o, Title: fmt.Sprintf("%s: %d %s", is.KID, n, o)})
			x += w
		}
		c.Labels = append(c.Labels,
			label{X: left - 8, Y: y + 13, Text: is.KID, Anchor: "end"},
			label{X: x + 6, Y: y + 13, Text: fmt.Sprint(is.Allow + is.Ask + is.Deny), Anchor: "start"})
	}
	return c
}

// tlogProof is the c2sp.org/tlog-proof@v1 of entry n: its inclusion proof
// under the signed checkpoint cp.
func tlogProof(n uint64, hashes [][]byte, cp []byte) []byte {
	p := proof.TLogProof{Index: n, Checkpoint: cp, Hashes: make([][sha256.Size]byte, len(hashes))}
	for i, h := range hashes {
		copy(p.Hashes[i][:], h)
	}
	return p.Marshal()
}
