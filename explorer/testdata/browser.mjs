// Drives the explorer page in headless Chromium with playwright-core:
// node browser.mjs URL ISSUER_KID. Prints one line per check and exits
// non-zero on the first failure. Run by explorer's TestBrowser.
import { chromium } from 'playwright-core';

const [url, kid] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const fail = async (msg) => { console.log('FAIL ' + msg); await browser.close(); process.exit(1); };
try {
  const page = await browser.newPage();
  const blocked = [];
  page.on('console', (m) => { if (m.type() === 'error') blocked.push(m.text()); });
  await page.goto(url);
  if (!(await page.locator('#verified').isVisible())) await fail('home: no verified checkpoint');
  const size = (await page.locator('#size').textContent()).trim();
  console.log('ok home size=' + size);
  const rows = await page.locator('#entries tr').count();
  if (rows < 2) await fail('home: no entry rows');
  console.log('ok entries rows=' + (rows - 1));
  await page.locator('#entries tr >> nth=1 >> a >> nth=0').click();
  await page.waitForSelector('#inclusion');
  if (!(await page.locator('#inclusion.ok').isVisible())) await fail('entry: inclusion not verified');
  if (!(await page.locator('#signature.ok').isVisible())) await fail('entry: signature not verified');
  const receipt = await page.locator('#receipt').textContent();
  if (!receipt.includes('"signature"')) await fail('entry: no receipt shown');
  console.log('ok entry ' + page.url());
  await page.goto(url);
  await page.locator(`#issuers a:text("${kid}")`).click();
  await page.waitForSelector('#summary');
  const summary = await page.locator('#summary').textContent();
  console.log('ok issuer summary=' + summary.replace(/\s+/g, ' ').trim());
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#download').click()]);
  const path = await download.path();
  console.log('ok download ' + path);
  if (blocked.length) await fail('console errors: ' + blocked.join('; '));
  await page.goto(url + 'entry/999999');
  if (!(await page.locator('#message').isVisible())) await fail('missing entry: no error page');
  console.log('ok missing entry');
} catch (e) {
  await fail(String(e));
}
await browser.close();
