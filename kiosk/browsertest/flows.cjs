// The kiosk's browser flows in real Chromium, driven by playwright-core
// (Debian's chromium through executablePath; nothing is downloaded), with
// axe-core checking every screen against WCAG 2.2 AA.
//
// Run by edge/sitetest's TestKioskBrowser, which starts the cloud and a
// site appliance with its kiosk and a simulated label printer, and hands
// this script a JSON plan as its only argument:
//   {url, chromium, screenshots, lang, phase, codes: {visitor, reception},
//    pin, data: {...}}
// or, for phase "enrolment" (an appliance not enrolled yet, then running):
//   {url, chromium, lang, phase, texts, enrolment: {code, alert}}
// It prints one JSON line: {ok, results, violations, error}. The Go test
// checks what the flows did on the cloud's side.
"use strict";

const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");
const axePath = require.resolve("axe-core/axe.min.js");

const plan = JSON.parse(process.argv[2]);
const results = {};
const violations = [];
const T = plan.texts; // the catalogue of the plan's language, from the Go side

function fail(msg) {
  throw new Error(msg);
}

async function shot(page, name) {
  if (!plan.screenshots) return;
  const file = path.join(plan.screenshots, `${name}-${plan.lang}.png`);
  await page.screenshot({ path: file, fullPage: true });
}

// check runs axe-core on the page and keeps what it reports. The pages'
// Content-Security-Policy allows no injected script: the contexts bypass
// it for axe alone.
async function check(page, name) {
  results.screensChecked = (results.screensChecked || 0) + 1;
  await page.addScriptTag({ path: axePath });
  const res = await page.evaluate(async () =>
    // eslint-disable-next-line no-undef
    axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"] } })
  );
  for (const v of res.violations) {
    violations.push({ screen: name, lang: plan.lang, id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) });
  }
}

async function screen(page, name) {
  await check(page, name);
  await shot(page, name);
}

async function expectText(page, text) {
  const body = await page.textContent("body");
  if (!body.includes(text)) fail(`expected "${text}" on ${page.url()}`);
}

async function pair(context, code) {
  const page = await context.newPage();
  await page.goto(plan.url + "/");
  if (!page.url().endsWith("/pair")) fail(`an unpaired browser was not sent to /pair but ${page.url()}`);
  await setLanguage(page);
  await screen(page, "pair");
  await page.getByLabel(T["pair.code"]).fill(code);
  await page.getByRole("button", { name: T["pair.submit"] }).click();
  await page.waitForLoadState();
  return page;
}

async function setLanguage(page) {
  if (plan.lang === "en") return;
  const btn = page.locator(`form.langs button[value="${plan.lang}"]`);
  await btn.click();
  await page.waitForLoadState();
  const lang = await page.getAttribute("html", "lang");
  if (lang !== plan.lang) fail(`language switch: html lang is ${lang}`);
}

// waitForText reloads the page until it shows text: what depends on the
// cloud's acknowledgement (the host told) shows within seconds online.
async function waitForText(page, text, timeoutMs) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const body = await page.textContent("main");
    if (body.includes(text)) return;
    if (Date.now() > end) fail(`"${text}" did not appear on ${page.url()}: ${body.slice(0, 300)}`);
    await page.waitForTimeout(250);
    await page.reload();
  }
}

// walkIn signs a visitor in for a team, answering the type's form.
async function walkIn(page, who) {
  await page.goto(plan.url + "/");
  await screen(page, "welcome");
  await page.getByRole("link", { name: T["welcome.sign_in"] }).click();
  await page.waitForLoadState();
  await screen(page, "walkin-who");
  await page.getByRole("link", { name: who.team, exact: true }).click();
  await page.waitForLoadState();
  await screen(page, "walkin-type");
  await page.getByRole("link", { name: who.typeName, exact: true }).click();
  await page.waitForLoadState();
  await page.getByLabel(T["field.name"]).fill(who.name);
  await screen(page, "walkin-name");
  await page.getByRole("button", { name: T["nav.next"] }).click();
  await page.waitForLoadState();
  await page.getByLabel(T["field.phone"]).fill(who.phone);
  await page.getByLabel(T["field.email"]).fill(who.email);
  for (const a of who.answers || []) {
    // A question's label may end with its required mark.
    const field = page.getByLabel(new RegExp("^" + a.label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    if (a.check) await field.check();
    else await field.fill(a.value);
  }
  // A conditional question appears as its condition is answered (the
  // form script), and goes again when it is not.
  if (who.reveal) {
    const hidden = page.locator(who.reveal.question);
    if (await hidden.isVisible()) fail(`${who.reveal.question} shows before its condition is answered`);
    await page.locator(who.reveal.yes).check();
    await hidden.waitFor({ state: "visible", timeout: 5000 });
    await page.locator(who.reveal.no).check();
    await hidden.waitFor({ state: "hidden", timeout: 5000 });
    await page.locator(who.reveal.yes).check();
    for (const sel of who.reveal.answers) await page.locator(sel).check();
    results.revealed = true;
  }
  await screen(page, "walkin-details");
  await page.getByRole("button", { name: T["walkin.submit"] }).click();
  await page.waitForLoadState();
  if (!/\/visits\/visit_[0-9a-z]{26}\/done$/.test(page.url())) {
    fail(`walk-in did not finish: ${page.url()}: ${(await page.textContent("main")).slice(0, 400)}`);
  }
  return page.url().match(/visit_[0-9a-z]{26}/)[0];
}

// enrolment is a tablet pointed at an appliance that is not enrolled yet:
// the enrolment page shows the code; once the appliance runs, the page's
// script (on the page's own clock, run forward here) reloads it onto the
// pairing page, though its first request again gets no answer.
async function enrolment(browser) {
  const E = plan.enrolment;
  const context = await browser.newContext({ locale: plan.lang, bypassCSP: true });
  const page = await context.newPage();
  await page.clock.install();
  const res = await page.goto(plan.url + "/");
  if (res.status() !== 503) fail(`the enrolment page answered ${res.status()}, not 503`);
  await setLanguage(page);
  await page.getByRole("heading", { level: 1, name: T["enrol.title"] }).waitFor();
  await page.getByRole("heading", { level: 2, name: T["enrol.code"] }).waitFor();
  results.enrolmentCode = (await page.locator(".code").textContent()).trim();
  const alert = await page.getByRole("alert").textContent();
  if (!alert.includes(E.alert)) fail(`the clock warning reads "${alert}"`);
  await screen(page, "enrolment");
  for (let i = 0; i < 20 && !page.url().endsWith("/pair"); i++) {
    await page.clock.runFor(5000);
    await page.waitForTimeout(200);
  }
  if (!page.url().endsWith("/pair")) fail(`the enrolment page did not reload onto the pairing page: ${page.url()}`);
  await page.getByLabel(T["pair.code"]).waitFor();
  results.landedOnPair = true;
  await check(page, "pair-after-enrolment");
}

async function main() {
  const browser = await chromium.launch({
    executablePath: plan.chromium,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  try {
    if (plan.phase === "enrolment") {
      await enrolment(browser);
      console.log(JSON.stringify({ ok: true, results, violations }));
      return;
    }
    const visitor = await browser.newContext({ locale: plan.lang, bypassCSP: true });
    const vpage = await pair(visitor, plan.codes.visitor);
    const D = plan.data;

    // Walk-in for a team: the team is told (online) or will be (offline).
    results.walkIn = await walkIn(vpage, D.walkIn);
    await waitForText(vpage, D.expect.walkInTold, 15000);
    if (D.expect.offline && (await vpage.locator(".offline").count()) === 0) fail("the offline indicator is not shown");
    await screen(vpage, "walkin-done");
    await vpage.getByRole("button", { name: T["badge.print"] }).click();
    await vpage.waitForLoadState();
    await expectText(vpage, T["print.printed"]);
    await screen(vpage, "walkin-printed");

    // Visitor mode returns to the welcome screen after 30 s alone.
    await vpage.clock.install();
    await vpage.goto(plan.url + "/walk-in");
    await vpage.getByLabel(T["walkin.search_person"]).fill("typed");
    await vpage.clock.fastForward(31000);
    await vpage.waitForURL(plan.url + "/");
    results.idleReset = true;

    // Express check-in by the invitation's short code, and a pass refused
    // in plain words.
    await vpage.goto(plan.url + "/check-in");
    await screen(vpage, "checkin");
    await vpage.getByLabel(T["checkin.code"]).fill(D.invitedCode);
    await vpage.getByLabel(T["checkin.code"]).press("Enter");
    await vpage.waitForLoadState();
    if (!/\/done$/.test(vpage.url())) fail(`check-in by code: ${vpage.url()}: ${(await vpage.textContent("main")).slice(0, 300)}`);
    results.checkInByCode = vpage.url().match(/visit_[0-9a-z]{26}/)[0];
    await screen(vpage, "checkin-done");

    await vpage.goto(plan.url + "/check-in");
    await vpage.getByLabel(T["checkin.scan"]).fill(D.earlyPass);
    await vpage.getByLabel(T["checkin.scan"]).press("Enter");
    await vpage.waitForLoadState();
    await expectText(vpage, T["reason.not_yet"]);
    await screen(vpage, "checkin-refused");

    // Sign-out by name: short names only, then goodbye.
    await vpage.goto(plan.url + "/sign-out");
    await vpage.getByLabel(T["signout.search"]).fill(D.signOut.search);
    await vpage.getByLabel(T["signout.search"]).press("Enter");
    await vpage.waitForLoadState();
    if ((await vpage.textContent("main")).includes(D.signOut.fullName)) fail("sign-out search shows a full name");
    await screen(vpage, "signout-search");
    await vpage.getByRole("button", { name: new RegExp(D.signOut.shortName.replace(".", "\\.")) }).first().click();
    await vpage.waitForLoadState();
    await screen(vpage, "signout-done");
    results.signedOut = true;

    // Reception, on its own paired device.
    const desk = await browser.newContext({ locale: plan.lang, bypassCSP: true });
    const dpage = await pair(desk, plan.codes.reception);
    await dpage.goto(plan.url + "/reception");
    await screen(dpage, "reception");
    const queued = (name) => dpage.locator('section[aria-labelledby="queue"] tr', { hasText: name });
    if ((await queued(D.walkIn.name).count()) === 0) fail("the walk-in is not in the queue");

    await queued(D.walkIn.name).getByRole("link", { name: T["reception.hand_over"] }).click();
    await dpage.waitForLoadState();
    await screen(dpage, "handover");
    await dpage.getByRole("button", { name: D.handOver.team, exact: true }).click();
    await dpage.waitForLoadState();
    if (!(await queued(D.walkIn.name).textContent()).includes(D.handOver.team)) fail("the hand-over's team is not shown in the queue");
    results.handedOver = true;

    await queued(D.walkIn.name).getByRole("link", { name: T["reception.take"] }).click();
    await dpage.waitForLoadState();
    await dpage.getByLabel(T["walkin.search_person"]).fill(D.taker.search);
    await dpage.getByLabel(T["walkin.search_person"]).press("Enter");
    await dpage.waitForLoadState();
    await screen(dpage, "take");
    await dpage.getByRole("button", { name: new RegExp(D.taker.name) }).click();
    await dpage.waitForLoadState();
    if ((await queued(D.walkIn.name).count()) !== 0) fail("the taken visit is still in the queue");
    results.taken = true;

    await dpage.goto(plan.url + "/reception/on-site/print");
    await expectText(dpage, D.walkIn.name);
    await screen(dpage, "evacuation");

    await dpage.goto(plan.url + "/reception");
    const onsite = dpage.locator('section[aria-labelledby="onsite"] tr', { hasText: D.walkIn.name });
    await onsite.getByRole("button", { name: T["reception.check_out"] }).click();
    await dpage.waitForLoadState();
    if ((await onsite.count()) !== 0) fail("the checked-out visitor is still on site");
    results.checkedOut = true;
    console.log(JSON.stringify({ ok: true, results, violations }));
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: String((e && e.stack) || e), results, violations }));
  process.exitCode = 1;
});
