// Feeds each corpus line to a hook guard as a Claude Code PreToolUse event
// and counts its answers. See cc-safety-net-corpus.sh.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';

const [bin, root, attacksFile, benignFile] = process.argv.slice(2);
const home = join(root, 'home');
const proj = join(home, 'proj');

// The fixture of policy/policy_test.go and policy/corpus_test.go.
for (const f of ['.ssh/id_rsa', '.ssh/id_ed25519', '.aws/credentials', '.bashrc', '.claude/settings.json',
  'proj/main.go', 'proj/README.md', 'proj/src/a.go', 'proj/.env', 'proj/.env.example', 'proj/.env.local',
  'proj/.docket/chain.jsonl', 'proj/.docket/issuer.key', 'proj/.docket/policy/docket.cedar',
  'proj/.claude/settings.json', 'proj/.claude/settings.local.json', 'proj/.git/config',
  'proj/.git/hooks/pre-commit', 'proj/scripts/test.sh', 'proj/package.json']) {
  mkdirSync(dirname(join(home, f)), { recursive: true });
  writeFileSync(join(home, f), 'x');
}
mkdirSync(join(proj, 'build'), { recursive: true });
for (const [link, target] of [['link-ssh', join(home, '.ssh')], ['innocent.txt', join(home, '.ssh/id_rsa')],
  ['escape', root], ['dangling', join(home, '.bashrc')], ['dotenv-link', '.env'], ['state', '.docket']]) {
  symlinkSync(target, join(proj, link));
}

// parse reads a corpus file: [family] headers, @Tool lines, ⏎ for newlines.
function parse(file) {
  const out = [];
  let family = '';
  for (const text of readFileSync(file, 'utf8').split('\n')) {
    if (text === '' || text.startsWith('#')) continue;
    if (text.startsWith('[') && text.endsWith(']')) { family = text.slice(1, -1); continue; }
    let tool = 'Bash', input;
    if (!text.startsWith('@')) {
      input = { command: text.replaceAll('⏎', '\n'), description: 'corpus' };
    } else {
      const sp = text.indexOf(' ');
      tool = text.slice(1, sp);
      const rest = text.slice(sp + 1);
      const abs = (p) => p.startsWith('~/') ? join(home, p.slice(2)) : p.startsWith('/') ? p : join(proj, p);
      switch (tool) {
        case 'Read': case 'Write': case 'Edit':
          input = { file_path: abs(rest), content: 'x', old_string: 'a', new_string: 'b' }; break;
        case 'Glob': input = { pattern: rest }; break;
        case 'Grep': {
          const i = rest.lastIndexOf(' ');
          input = i > 0 ? { pattern: rest.slice(0, i), path: abs(rest.slice(i + 1)) } : { pattern: rest };
          break;
        }
        case 'WebFetch': input = { url: rest, prompt: 'summarize' }; break;
        default: input = JSON.parse(rest);
      }
    }
    out.push({ family, text, tool, input });
  }
  return out;
}

// decide runs the guard on one call: "deny", "ask" or "allow".
function decide(c) {
  const event = { session_id: 'corpus', transcript_path: join(home, '.claude/t.jsonl'), cwd: proj,
    hook_event_name: 'PreToolUse', tool_name: c.tool, tool_input: c.input, tool_use_id: 'toolu_corpus' };
  const r = spawnSync(process.execPath, [bin, 'hook', '--claude-code'], {
    input: JSON.stringify(event), cwd: proj, encoding: 'utf8',
    env: { ...process.env, HOME: home, CC_SAFETY_NET_HOME: join(root, 'ccsn') },
  });
  if (r.status === 2) return 'deny';
  const m = /"permissionDecision"\s*:\s*"(\w+)"/.exec(r.stdout || '');
  return m ? m[1] : 'allow';
}

const verbose = process.env.VERBOSE === '1';
let attacks = 0, blocked = 0, benign = 0, allowed = 0;
for (const c of parse(attacksFile)) {
  attacks++;
  const d = decide(c);
  if (d !== 'allow') blocked++; else if (verbose) console.log(`missed [${c.family}] ${c.text}`);
}
for (const c of parse(benignFile)) {
  benign++;
  const d = decide(c);
  if (d === 'allow') allowed++; else if (verbose) console.log(`blocked ${d} [${c.family}] ${c.text}`);
}
const pct = (a, b) => (100 * a / b).toFixed(1);
console.log(`cc-safety-net: attacks blocked ${blocked}/${attacks} (${pct(blocked, attacks)}%), ordinary calls allowed ${allowed}/${benign} (${pct(allowed, benign)}%)`);
