// The kiosk's browser flows in real Chromium, driven by playwright-core
// (Debian's chromium through executablePath; nothing is downloaded), with
// axe-core checking every screen against WCAG 2.2 AA.
//
// Run by edge/sitetest's TestKioskBrowser, which starts the cloud and a
// site appliance with its kiosk and a simulated label printer, and hands
// this script a JSON plan as its only argument:
//   {url, chromium, screenshots, lang, phase, codes: {visitor, reception},
//    pin, data: {...}}
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

// check runs axe-core on the page and keeps what it reports.
async function check(page, name) {
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

// walkIn signs a visitor in for a team, answering the type's form.
async function walkIn(page, who) {
  await page.goto(plan.url + "/");
  await screen(page, "welcome");
  await page.getByRole("link", { name: T["welcome.sign_in"] }).click();
  await screen(page, "walkin-who");
  await page.getByRole("link", { name: who.team }).click();
  await screen(page, "walkin-type");
  await page.getByRole("link", { name: who.typeName }).click();
  await page.getByLabel(T["field.name"]).fill(who.name);
  await screen(page, "walkin-name");
  await page.getByRole("button", { name: T["nav.next"] }).click();
  await page.waitForLoadState();
  await page.getByLabel(T["field.phone"]).fill(who.phone);
  await page.getByLabel(T["field.email"]).fill(who.email);
  await page.getByLabel(T["field.company"]).fill(who.company);
  for (const a of who.answers || []) {
    if (a.check) await page.getByLabel(a.label, { exact: true }).check();
    else await page.getByLabel(a.label, { exact: true }).fill(a.value);
  }
  await screen(page, "walkin-details");
  await page.getByRole("button", { name: T["walkin.submit"] }).click();
  await page.waitForLoadState();
  if (!/\/visits\/visit_[0-9a-z]{26}\/done$/.test(page.url())) {
    fail(`walk-in did not finish: ${page.url()}: ${(await page.textContent("main")).slice(0, 300)}`);
  }
  await screen(page, "walkin-done");
  return page.url().match(/visit_[0-9a-z]{26}/)[0];
}

async function main() {
  const browser = await chromium.launch({
    executablePath: plan.chromium,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  try {
    const visitor = await browser.newContext({ locale: plan.lang });
    const vpage = await pair(visitor, plan.codes.visitor);
    await setLanguage(vpage);

    // Walk-in for a team: it joins the queue.
    results.walkIn = await walkIn(vpage, plan.data.walkIn);
    if (plan.phase === "offline") await expectText(vpage, T["done.told_later"].split("%s")[1].trim().slice(0, 20));
    // The badge's image is there and the printer prints it.
    const img = await vpage.locator("img.badge").getAttribute("src");
    if (!img) fail("no badge on the done page");
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

    // Express check-in by the invitation's short code, and by a scanned pass.
    await vpage.goto(plan.url + "/check-in");
    await screen(vpage, "checkin");
    await vpage.getByLabel(T["checkin.code"]).fill(plan.data.invitedCode);
    await vpage.locator("form", { has: vpage.getByLabel(T["checkin.code"]) }).getByRole("button").click();
    await vpage.waitForLoadState();
    if (!/\/done$/.test(vpage.url())) fail(`check-in by code: ${vpage.url()}: ${(await vpage.textContent("main")).slice(0, 300)}`);
    await screen(vpage, "checkin-done");
    results.checkInByCode = vpage.url().match(/visit_[0-9a-z]{26}/)[0];

    await vpage.goto(plan.url + "/check-in");
    await vpage.getByLabel(T["checkin.scan"]).fill(plan.data.earlyPass);
    await vpage.getByLabel(T["checkin.scan"]).press("Enter");
    await vpage.waitForLoadState();
    await expectText(vpage, T["reason.not_yet"]);
    await screen(vpage, "checkin-refused");

    // Sign-out by name: masked results, then goodbye.
    await vpage.goto(plan.url + "/sign-out");
    await vpage.getByLabel(T["signout.search"]).fill(plan.data.signOut.search);
    await vpage.getByLabel(T["signout.search"]).press("Enter");
    await vpage.waitForLoadState();
    const main = await vpage.textContent("main");
    if (main.includes(plan.data.signOut.fullName)) fail("sign-out search shows a full name");
    await screen(vpage, "signout-search");
    await vpage.getByRole("button", { name: new RegExp(plan.data.signOut.shortName) }).first().click();
    await vpage.waitForLoadState();
    await screen(vpage, "signout-done");
    results.signedOut = true;

    // Reception: on its own paired device.
    const desk = await browser.newContext({ locale: plan.lang });
    const dpage = await pair(desk, plan.codes.reception);
    await setLanguage(dpage);
    await dpage.goto(plan.url + "/reception");
    await screen(dpage, "reception");
    const row = dpage.locator("tr", { hasText: plan.data.walkIn.name });
    if ((await row.count()) === 0) fail("the walk-in is not in the queue");
    if (plan.data.handOver) {
      const hrow = dpage.locator("tr", { hasText: plan.data.handOver.name });
      await hrow.getByRole("link", { name: T["reception.hand_over"] }).click();
      await screen(dpage, "handover");
      await dpage.getByRole("button", { name: plan.data.handOver.team }).click();
      await dpage.waitForLoadState();
      results.handedOver = true;
    }
    await row.getByRole("link", { name: T["reception.take"] }).click();
    await dpage.getByLabel(T["walkin.search_person"]).fill(plan.data.taker.search);
    await dpage.getByLabel(T["walkin.search_person"]).press("Enter");
    await dpage.waitForLoadState();
    await screen(dpage, "take");
    await dpage.getByRole("button", { name: new RegExp(plan.data.taker.name) }).click();
    await dpage.waitForLoadState();
    if ((await dpage.locator("#queue ~ table tr", { hasText: plan.data.walkIn.name }).count()) !== 0) {
      fail("the taken visit is still in the queue");
    }
    results.taken = true;

    await dpage.goto(plan.url + "/reception/on-site/print");
    await expectText(dpage, plan.data.walkIn.name);
    await screen(dpage, "evacuation");

    if (plan.data.checkOut) {
      await dpage.goto(plan.url + "/reception");
      const orow = dpage.locator("tr", { hasText: plan.data.checkOut });
      await orow.getByRole("button", { name: T["reception.check_out"] }).click();
      await dpage.waitForLoadState();
      results.checkedOut = true;
    }
    console.log(JSON.stringify({ ok: true, results, violations }));
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: String(e && e.stack || e), results, violations }));
  process.exitCode = 1;
});
