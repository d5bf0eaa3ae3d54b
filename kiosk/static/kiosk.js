// The kiosk's only script. Every page works without it; it adds what a
// tablet needs: back to the welcome screen after 30 s alone (what was
// typed goes with the page), print buttons, and a page that waits on the
// appliance reloading once it answers.
(function () {
  "use strict";
  var body = document.body;
  var idle = parseInt(body.getAttribute("data-idle") || "0", 10);
  if (idle > 0) {
    var timer;
    var reset = function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        document.querySelectorAll("form").forEach(function (f) { f.reset(); });
        window.location.replace("/");
      }, idle * 1000);
    };
    ["pointerdown", "keydown", "input", "scroll", "touchstart"].forEach(function (e) {
      window.addEventListener(e, reset, { passive: true, capture: true });
    });
    reset();
  }
  // A page that waits on the appliance (data-refresh, in seconds: the
  // enrolment page) asks it again that often and reloads once it answers.
  // A reload while the appliance restarts would leave the tablet on the
  // browser's own error page, which does not come back by itself.
  var refresh = parseInt(body.getAttribute("data-refresh") || "0", 10);
  if (refresh > 0) {
    var poll = function () {
      fetch(window.location.href, { method: "HEAD", cache: "no-store" }).then(function () {
        window.location.reload();
      }, function () {
        setTimeout(poll, refresh * 1000);
      });
    };
    setTimeout(poll, refresh * 1000);
  }
  document.querySelectorAll("[data-print]").forEach(function (b) {
    b.addEventListener("click", function () { window.print(); });
  });
})();
