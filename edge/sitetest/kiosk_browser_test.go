package sitetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/kiosk/printer"
	"github.com/svc-vms/svc/shared/ids"
)

// browserEnv is what the kiosk's browser tests need besides Go: Debian's
// chromium and the npm packages (playwright-core, axe-core) the Makefile
// fetches into .tools. Without them the test is skipped, or fails when
// SVC_TEST_REQUIRE_SERVICES=1 (CI).
func browserEnv(t *testing.T) (chromium, nodeModules string) {
	t.Helper()
	chromium, nodeModules = os.Getenv("SVC_TEST_CHROMIUM"), os.Getenv("SVC_TEST_NODE_MODULES")
	_, nodeErr := exec.LookPath("node")
	missing := ""
	switch {
	case chromium == "":
		missing = "SVC_TEST_CHROMIUM (Debian's chromium)"
	case nodeModules == "":
		missing = "SVC_TEST_NODE_MODULES (make browser-tools)"
	case nodeErr != nil:
		missing = "node"
	}
	if missing != "" {
		if os.Getenv("SVC_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("the kiosk's browser tests need %s", missing)
		}
		t.Skipf("the kiosk's browser tests need %s; make test sets it when it can", missing)
	}
	return chromium, nodeModules
}

// browserPlan is what flows.cjs is told to do.
type browserPlan struct {
	URL         string            `json:"url"`
	Chromium    string            `json:"chromium"`
	Screenshots string            `json:"screenshots"`
	Lang        string            `json:"lang"`
	Phase       string            `json:"phase"` // online or offline
	Codes       map[string]string `json:"codes"`
	Texts       map[string]string `json:"texts"`
	Data        browserData       `json:"data"`
	Enrolment   *enrolmentPlan    `json:"enrolment,omitempty"` // the enrolment phase's
}

// enrolmentPlan is what the enrolment page shows.
type enrolmentPlan struct {
	Code  string `json:"code"`
	Alert string `json:"alert"` // the clock warning
}

type browserData struct {
	WalkIn      walkInPlan     `json:"walkIn"`
	InvitedCode string         `json:"invitedCode"`
	EarlyPass   string         `json:"earlyPass"`
	SignOut     signOutPlan    `json:"signOut"`
	Taker       takerPlan      `json:"taker"`
	HandOver    *handOverPlan  `json:"handOver,omitempty"`
	Expect      map[string]any `json:"expect"`
}

type walkInPlan struct {
	Team     string       `json:"team"`
	TypeName string       `json:"typeName"`
	Name     string       `json:"name"`
	Phone    string       `json:"phone"`
	Email    string       `json:"email"`
	Company  string       `json:"company"`
	Answers  []answerPlan `json:"answers"`
	Reveal   *revealPlan  `json:"reveal,omitempty"`
}

// revealPlan is a conditional question: hidden until yes is chosen.
type revealPlan struct {
	Question string   `json:"question"` // the question's block
	Yes      string   `json:"yes"`
	No       string   `json:"no"`
	Answers  []string `json:"answers"` // controls to choose once it shows (it and what it requires)
}

type answerPlan struct {
	Label string `json:"label"`
	Value string `json:"value,omitempty"`
	Check bool   `json:"check,omitempty"`
}

type signOutPlan struct {
	Search    string `json:"search"`
	FullName  string `json:"fullName"`
	ShortName string `json:"shortName"`
}

type takerPlan struct {
	Search string `json:"search"`
	Name   string `json:"name"`
}

type handOverPlan struct {
	Name string `json:"name"`
	Team string `json:"team"`
}

type browserResult struct {
	OK         bool           `json:"ok"`
	Error      string         `json:"error"`
	Results    map[string]any `json:"results"`
	Violations []struct {
		Screen string   `json:"screen"`
		Lang   string   `json:"lang"`
		ID     string   `json:"id"`
		Impact string   `json:"impact"`
		Help   string   `json:"help"`
		Nodes  []string `json:"nodes"`
	} `json:"violations"`
}

// kioskWorld is a site with a kiosk, its printer, and the people, teams
// and visits the flows need.
type kioskWorld struct {
	w       *sitetest.World
	e       *sitetest.Edge
	sim     *printer.Simulator
	host    cloud.Person
	cats    kiosk.Catalogues
	chrome  string
	modules string
}

func newKioskWorld(t *testing.T, chromium, modules string) *kioskWorld {
	t.Helper()
	ctx := context.Background()
	w := sitetest.Start(t, sitetest.Options{Store: sitetest.SQLite, Broker: sitetest.Embedded})
	svc := w.Svc()
	kw := &kioskWorld{w: w, chrome: chromium, modules: modules}
	var err error
	kw.host, err = svc.CreatePerson(ctx, w.Tenant, cloud.PersonInput{Name: cloud.Some("Grace Hopper"), JobTitle: cloud.Some("Facilities lead")})
	require.NoError(t, err)
	_, err = svc.CreatePerson(ctx, w.Tenant, cloud.PersonInput{Name: cloud.Some("Alan Turing")})
	require.NoError(t, err)
	for _, name := range []string{"Facilities", "Sales"} {
		_, err = svc.CreateTeam(ctx, w.Tenant, cloud.TeamInput{Name: cloud.Some(name), VisitorsCanChoose: cloud.Some(true)})
		require.NoError(t, err)
	}
	kw.sim, err = printer.ListenSimulator("127.0.0.1:0", t.TempDir(), sitetest.Logger(t, "printer"))
	require.NoError(t, err)
	kw.sim.Load(printer.Media{Continuous: false, WidthMM: 62, LengthMM: 100})
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- kw.sim.Run(pctx) }()
	t.Cleanup(func() { cancel(); <-done })

	kw.e = w.NewEdge(t, sitetest.EdgeOptions{Kiosk: true, KioskPrinter: kw.sim.Addr()})
	kw.e.Start()
	w.WaitConverged(t, kw.e, settle)
	kw.cats, err = kiosk.LoadCatalogues()
	require.NoError(t, err)
	return kw
}

// invite makes an invited visit for name, for the host, expected from
// at for two hours.
func (kw *kioskWorld) invite(t *testing.T, name string, at time.Time) cloud.Visit {
	t.Helper()
	until := at.Add(2 * time.Hour)
	v, err := kw.w.Svc().CreateVisit(context.Background(), kw.w.Actor, cloud.VisitInput{
		SiteID: cloud.Some(kw.w.Site.SiteID), Type: cloud.Some("meeting"), ExpectedAt: cloud.Some(&at), ExpectedUntil: cloud.Some(&until),
		HostID:  cloud.Some(kw.host.ID),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some(name)}),
	})
	require.NoError(t, err)
	return v
}

// run runs flows.cjs once and returns what it did; it fails the test on
// a failed flow or on any accessibility violation.
func (kw *kioskWorld) run(t *testing.T, lang, phase, suffix string, n int) browserResult {
	t.Helper()
	now := time.Now().UTC()
	invited := kw.invite(t, "Vera "+suffix+" Visitor", now.Add(-10*time.Minute))
	early := kw.invite(t, "Eddie Early "+suffix, now.Add(26*time.Hour))
	earlyPass := kw.w.Token(t, early.ID)
	kw.w.WaitConverged(t, kw.e, settle)
	if phase == "offline" {
		kw.w.StopCloud()
		defer kw.w.StartCloud()
	}
	code := func(mode string) string {
		c, err := kw.e.App().NewPairingCode("Browser "+mode, mode)
		require.NoError(t, err)
		return c.Code
	}
	cat := kw.cats[lang]
	texts := kw.texts(lang)
	walkName := "Ada Lovelace " + suffix
	told := cat.T("done.told", "Facilities")
	if phase == "offline" {
		told = cat.T("done.told_later", "Facilities")
	}
	shots := os.Getenv("SVC_KIOSK_SCREENSHOTS") // docs/screenshots/kiosk: the online runs' screens
	if phase != "online" {
		shots = ""
	}
	plan := browserPlan{URL: kw.e.KioskURL(), Chromium: kw.chrome, Screenshots: shots, Lang: lang, Phase: phase,
		Codes: map[string]string{"visitor": code(kiosk.ModeVisitor), "reception": code(kiosk.ModeReception)}, Texts: texts,
		Data: browserData{
			WalkIn: walkInPlan{Team: "Facilities", TypeName: "Meeting", Name: walkName, Phone: fmt.Sprintf("+4477009001%02d", n), Email: "ada." + strings.ToLower(suffix) + "@example.com",
				Answers: []answerPlan{{Label: "Company", Value: "Analytical Engines"}, {Label: cat.T("form.agree"), Check: true}},
				// The meeting form asks the vehicle's type only of a
				// visitor who comes by vehicle (x-svc-show-if).
				Reveal: &revealPlan{Question: "#cf-vehicle_type-0", Yes: "#cf-has_vehicle-0", No: "#cf-has_vehicle-1", Answers: []string{"#cf-vehicle_type-0", "#cf-needs_parking-1"}}},
			InvitedCode: ids.FormatShortCode(ids.ShortCode(invited.ID)),
			EarlyPass:   earlyPass,
			SignOut:     signOutPlan{Search: "Vera", FullName: "Vera " + suffix + " Visitor", ShortName: "Vera V."},
			Taker:       takerPlan{Search: "gra", Name: "Grace Hopper"},
			HandOver:    &handOverPlan{Name: walkName, Team: "Sales"},
			Expect:      map[string]any{"walkInTold": told, "offline": phase == "offline"},
		}}
	res := kw.flows(t, plan)
	if phase == "offline" {
		require.Positive(t, kw.e.Outbox(), "offline, the kiosk's facts wait in the outbox")
	}
	res.Results["invited"] = invited.ID
	return res
}

// flows runs flows.cjs once on plan and returns what it did; it fails the
// test on a failed flow or on any accessibility violation.
func (kw *kioskWorld) flows(t *testing.T, plan browserPlan) browserResult {
	t.Helper()
	if plan.Screenshots != "" {
		require.NoError(t, os.MkdirAll(plan.Screenshots, 0o755))
	}
	raw, err := json.Marshal(plan)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	script, err := filepath.Abs("../../kiosk/browsertest/flows.cjs")
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, "node", script, string(raw))
	cmd.Env = append(os.Environ(), "NODE_PATH="+kw.modules)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res browserResult
	line := strings.TrimSpace(stdout.String())
	if i := strings.LastIndex(line, "\n"); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("flows.cjs (%s, %s): %v\nstdout: %s\nstderr: %s", plan.Lang, plan.Phase, runErr, stdout.String(), stderr.String())
	}
	if !res.OK {
		t.Fatalf("flows.cjs (%s, %s) failed: %s\nstderr: %s", plan.Lang, plan.Phase, res.Error, stderr.String())
	}
	for _, v := range res.Violations {
		t.Errorf("accessibility (%s, %s screen): %s (%s): %s at %v", v.Lang, v.Screen, v.ID, v.Impact, v.Help, v.Nodes)
	}
	return res
}

// texts is the catalogue of lang, for the flows to find elements by the
// names people read.
func (kw *kioskWorld) texts(lang string) map[string]string {
	cat := kw.cats[lang]
	texts := map[string]string{}
	for _, k := range cat.Keys() {
		texts[k] = cat.T(k)
	}
	return texts
}

// TestKioskBrowser runs every kiosk flow in real Chromium against a real
// appliance and cloud, in English and French, with the cloud up and with
// it stopped; axe-core checks every screen. Offline, the walk-ins wait in
// the edge's outbox and reach the cloud once it is back.
func TestKioskBrowser(t *testing.T) {
	chromium, modules := browserEnv(t)
	kw := newKioskWorld(t, chromium, modules)
	for n, tc := range []struct{ lang, phase string }{{"en", "online"}, {"fr", "online"}, {"en", "offline"}, {"fr", "offline"}} {
		t.Run(tc.lang+"_"+tc.phase, func(t *testing.T) {
			suffix := fmt.Sprintf("%s%s", strings.ToUpper(tc.lang), tc.phase[:3])
			res := kw.run(t, tc.lang, tc.phase, suffix, n)
			require.GreaterOrEqual(t, res.Results["screensChecked"], float64(15), "axe-core checked every screen")
			require.Equal(t, true, res.Results["revealed"], "a conditional question showed and hid as answered")
			walkIn, _ := res.Results["walkIn"].(string)
			require.True(t, ids.Valid(ids.Visit, walkIn), "walk-in visit %q", walkIn)
			sitetest.Eventually(t, heal, func() bool { return kw.e.Outbox() == 0 }, "the kiosk's facts did not reach the cloud")
			kw.w.WaitConverged(t, kw.e, settle)

			// The cloud holds what happened at the desk, as it happened.
			v := kw.w.Visit(t, walkIn)
			require.Equal(t, cloud.SourceWalkIn, v.Source)
			require.Equal(t, cloud.VisitCheckedOut, v.Status)
			require.Equal(t, "Ada Lovelace "+suffix, v.Visitor.Name)
			require.Equal(t, kw.host.ID, v.HostID, "taken at reception by Grace Hopper")
			invited := kw.w.Visit(t, res.Results["invited"].(string))
			require.Equal(t, cloud.VisitCheckedOut, invited.Status, "checked in by code, then signed out")
		})
	}
	require.GreaterOrEqual(t, len(kw.sim.Printed()), 4, "a badge printed in each run")
}

// TestKioskBrowser_Enrolment: a tablet pointed at an appliance that is not
// enrolled yet sees the kiosk's enrolment page, in English and French
// (its code and clock warning; axe-core checks it). When the appliance
// restarts enrolled, the page's script rides out the restart (its first
// request again gets no answer) and the tablet lands on the kiosk's
// pairing page by itself.
func TestKioskBrowser_Enrolment(t *testing.T) {
	chromium, modules := browserEnv(t)
	kw := newKioskWorld(t, chromium, modules)
	const code = "7KQ2-M9XD"
	status := kiosk.Enrolment{Code: code, ExpiresAt: time.Now().Add(10 * time.Minute), Cloud: "https://cloud.example.com",
		Skew: 42 * time.Second, SkewWarning: true}
	page, err := kiosk.EnrolmentHandler(kiosk.EnrolmentConfig{Languages: []string{"en", "fr"}, Logger: sitetest.Logger(t, "enrolment"),
		Status: func() kiosk.Enrolment { return status }})
	require.NoError(t, err)
	for _, lang := range []string{"en", "fr"} {
		t.Run(lang, func(t *testing.T) {
			// The kiosk's address: the enrolment page until the page's
			// script asks again; then the appliance restarts, and the
			// script's next requests are closed unanswered; from then on
			// the enrolled appliance's kiosk. No keep-alive: the browser
			// retries a request whose reused connection closed, but not
			// one on a new connection, so each closed request is one the
			// script sees fail.
			const unanswered = 2
			var asked atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case asked.Load() >= unanswered:
					kw.e.App().KioskHandler().ServeHTTP(w, r)
				case r.Method == http.MethodHead:
					asked.Add(1)
					panic(http.ErrAbortHandler) // the connection closes unanswered
				default:
					page.ServeHTTP(w, r)
				}
			}))
			srv.Config.SetKeepAlivesEnabled(false)
			srv.Start()
			defer srv.Close()
			res := kw.flows(t, browserPlan{URL: srv.URL, Chromium: kw.chrome, Screenshots: os.Getenv("SVC_KIOSK_SCREENSHOTS"),
				Lang: lang, Phase: "enrolment", Texts: kw.texts(lang),
				Enrolment: &enrolmentPlan{Code: code, Alert: kw.cats[lang].T("enrol.skew", 42)}})
			require.Equal(t, code, res.Results["enrolmentCode"])
			require.Equal(t, int32(unanswered), asked.Load(), "the page's script asked again while nothing answered")
			require.Equal(t, true, res.Results["landedOnPair"])
			require.GreaterOrEqual(t, res.Results["screensChecked"], float64(2), "axe-core checked the enrolment and pairing pages")
		})
	}
}
