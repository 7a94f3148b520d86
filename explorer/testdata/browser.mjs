// Drives the explorer in headless Chromium with playwright-core:
// node browser.mjs URL ISSUER_KID SCREENSHOT_DIR. Prints one line per check
// and exits non-zero on the first failure. Run by explorer's TestBrowser
// over a log of 10,000 entries.
import { chromium } from 'playwright-core';

const [url, kid, shots] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const fail = async (msg) => { console.log('FAIL ' + msg); await browser.close(); process.exit(1); };
const shot = async (page, name) => { await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true }); console.log('ok screenshot ' + name); };
try {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  // Home: verified checkpoint, witnesses, charts drawn on the server.
  const resp = await page.goto(url);
  const csp = resp.headers()['content-security-policy'];
  if (!csp.startsWith("default-src 'none'") || csp.includes('unsafe')) await fail('home: CSP ' + csp);
  if (!(await page.locator('#verified').isVisible())) await fail('home: no verified checkpoint');
  const size = (await page.locator('#size').textContent()).trim();
  console.log('ok home size=' + size);
  const witnesses = await page.locator('#witnesses tr').count();
  console.log('ok witnesses rows=' + (witnesses - 1) + ' quorum=' + (await page.locator('#quorum').textContent()));
  const bars = await page.locator('#chart-hourly svg rect').count();
  const issuerBars = await page.locator('#chart-issuers svg rect').count();
  if (bars < 10 || issuerBars < 3) await fail(`home: charts have ${bars} and ${issuerBars} bars`);
  console.log(`ok chart bars=${bars} issuer-bars=${issuerBars}`);
  // The stylesheet applies under the CSP: a deny row is highlighted.
  const denyBg = await page.locator('#entries tr.deny td >> nth=0').evaluate((el) => getComputedStyle(el).backgroundColor).catch(() => '');
  if (!denyBg || denyBg === 'rgba(0, 0, 0, 0)') await fail('home: deny rows not highlighted (' + denyBg + ')');
  console.log('ok deny highlighted ' + denyBg);
  await shot(page, 'home');

  // Navigation across pages: older three times, then newer once.
  const firstIndex = async () => Number((await page.locator('#entries tr >> nth=1 >> td >> nth=0').textContent()).trim());
  const top = await firstIndex();
  for (let i = 0; i < 3; i++) await Promise.all([page.waitForURL(/before=/), page.locator('#older').click()]);
  const third = await firstIndex();
  if (third !== top - 150) await fail(`pages: after three older pages the first entry is ${third}, want ${top - 150}`);
  if ((await page.locator('#entries tr').count()) !== 51) await fail('pages: not 50 rows');
  await Promise.all([page.waitForURL(/after=/), page.locator('#newer').click()]);
  if ((await firstIndex()) !== top - 100) await fail('pages: newer went to ' + (await firstIndex()));
  console.log(`ok pages ${top} -> ${third} -> ${top - 100}`);

  // Search: denies of Read, from the form.
  await page.goto(url + 'search');
  await page.locator('input[name=tool]').fill('Read');
  await page.locator('select[name=decision]').selectOption('deny');
  await Promise.all([page.waitForURL(/decision=deny/), page.locator('#search-button').click()]);
  const hits = await page.locator('#entries tr.deny .headline').allTextContents();
  if (hits.length < 5 || !hits.every((h) => h.startsWith('DENY · Read · '))) await fail('search: ' + hits.slice(0, 3).join(' | '));
  console.log(`ok search hits=${hits.length} first="${hits[0]}"`);
  await shot(page, 'search');
  const [jsonl] = await Promise.all([page.waitForEvent('download'), page.locator('#download-jsonl').click()]);
  console.log('ok download search ' + jsonl.suggestedFilename());

  // Entry: a deny, its headline, inclusion, prev/next, its downloads.
  await Promise.all([page.waitForURL(/\/entry\//), page.locator('#entries tr.deny a >> nth=0').click()]);
  if (!(await page.locator('#inclusion.ok').isVisible())) await fail('entry: inclusion not verified');
  if (!(await page.locator('#signature.ok').isVisible())) await fail('entry: signature not verified');
  const headline = (await page.locator('#headline').textContent()).trim();
  if (!headline.startsWith('DENY · Read · ')) await fail('entry: headline ' + headline);
  console.log('ok entry ' + page.url() + ' headline="' + headline + '"');
  await shot(page, 'entry');
  const [proof] = await Promise.all([page.waitForEvent('download'), page.locator('#download-proof').click()]);
  const fs = await import('node:fs');
  const proofText = fs.readFileSync(await proof.path(), 'utf8');
  if (!proofText.startsWith('c2sp.org/tlog-proof@v1\nindex ')) await fail('entry: proof download ' + proofText.slice(0, 40));
  console.log('ok download proof ' + proof.suggestedFilename());
  const here = page.url();
  await Promise.all([page.waitForURL((u) => u.toString() !== here), page.locator('#next-entry').click()]);
  await Promise.all([page.waitForURL(here), page.locator('#prev-entry').click()]);
  await Promise.all([page.waitForURL((u) => u.toString() !== here), page.locator('#previous-receipt').click()]);
  console.log('ok entry links');

  // Session: the chain in order with its verdict; executions linked.
  await Promise.all([page.waitForURL(/\/session\//), page.locator('#session-link').click()]);
  const verdict = (await page.locator('#verdict').textContent()).trim();
  if (!verdict.startsWith('Chain intact')) await fail('session: verdict ' + verdict);
  const seqs = (await page.locator('#chain tr td:first-child').allTextContents()).map(Number);
  if (seqs.length < 5 || seqs.some((s, i) => s !== i + 1)) await fail('session: sequences ' + seqs.join(','));
  if ((await page.locator('#chain a.decision-link').count()) < 1) await fail('session: no execution linked to its decision');
  console.log(`ok session receipts=${seqs.length} verdict="${verdict}"`);
  await shot(page, 'session');
  const [sess] = await Promise.all([page.waitForEvent('download'), page.locator('#download-session').click()]);
  const lines = fs.readFileSync(await sess.path(), 'utf8').trim().split('\n');
  if (lines.length !== seqs.length || !lines.every((l) => JSON.parse(l).signature)) await fail('session: download has ' + lines.length + ' lines');
  console.log('ok download session lines=' + lines.length);

  // Issuer: summary, chart, index download.
  await page.goto(url + 'issuer/' + kid);
  const summary = (await page.locator('#summary').textContent()).replace(/\s+/g, ' ').trim();
  console.log('ok issuer summary=' + summary);
  await shot(page, 'issuer');
  const [index] = await Promise.all([page.waitForEvent('download'), page.locator('#download').click()]);
  const idx = JSON.parse(fs.readFileSync(await index.path(), 'utf8'));
  if (idx.issuer !== kid || idx.entries.length !== 1000 || !idx.entries[0].inclusion_proof) await fail('issuer: index page ' + idx.entries.length);
  console.log('ok download index entries=' + idx.entries.length);

  if (errors.length) await fail('console errors: ' + errors.join('; '));
  // The CSP holds: a style or script injected into the page is refused.
  const injected = await page.evaluate(() => {
    const s = document.createElement('style');
    s.textContent = 'body{color:rgb(1, 2, 3)}';
    document.head.append(s);
    const sc = document.createElement('script');
    sc.textContent = 'window.injected = 1';
    document.head.append(sc);
    return [getComputedStyle(document.body).color, String(window.injected)];
  });
  if (injected[0] === 'rgb(1, 2, 3)' || injected[1] === '1') await fail('CSP: injected ' + injected.join(' '));
  console.log('ok csp refused inline style and script');

  await page.goto(url + 'entry/99999999');
  if (!(await page.locator('#message').isVisible())) await fail('missing entry: no error page');
  console.log('ok missing entry');
} catch (e) {
  await fail(String(e));
}
await browser.close();
