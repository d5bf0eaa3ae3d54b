// The kiosk's only script. Every page works without it; it adds what a
// tablet needs: back to the welcome screen after 30 s alone (what was
// typed goes with the page), and print buttons.
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
  document.querySelectorAll("[data-print]").forEach(function (b) {
    b.addEventListener("click", function () { window.print(); });
  });
})();
