// formview.js shows and hides a kiosk form's questions as answers change
// (x-svc-show-if), marks the questions required now (required, allOf/if/then)
// and searches people for person questions. The form works without it: the
// server decides the same from the answers after each submit. Hidden
// questions' controls are disabled, so their answers are not submitted.
(function () {
  "use strict";

  var numberRe = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

  // value returns question key's answer as JSON would hold it, or
  // undefined when it is hidden or unanswered.
  function value(root, key) {
    var q = root.querySelector('[data-q="' + key + '"]');
    if (!q || q.hidden) return undefined;
    var raw;
    var ctls = q.querySelectorAll('[name="cf.' + key + '"]');
    for (var i = 0; i < ctls.length; i++) {
      var c = ctls[i];
      if (c.disabled) continue;
      if (c.type === "radio" || c.type === "checkbox") {
        if (c.checked) { raw = c.value; break; }
      } else if (c.value) {
        raw = c.value;
        break;
      }
    }
    if (raw === undefined || raw.trim() === "") return undefined;
    raw = raw.trim();
    var type = q.getAttribute("data-type");
    if (type === "boolean" && (raw === "true" || raw === "false")) return raw === "true";
    if ((type === "integer" || type === "number") && numberRe.test(raw)) return Number(raw);
    return raw;
  }

  function holds(root, shown, c) {
    var v = value(root, c.k);
    return shown[c.k] === true && v !== undefined && v === c.v;
  }

  function update(root) {
    var shown = {};
    var keys = [];
    var qs = root.querySelectorAll("[data-q]");
    var i, j, q, key;
    // Show-if names only earlier questions: one pass in screen order.
    for (i = 0; i < qs.length; i++) {
      q = qs[i];
      key = q.getAttribute("data-q");
      var cond = q.getAttribute("data-show-if");
      var visible = !cond || holds(root, shown, JSON.parse(cond));
      q.hidden = !visible;
      var ctls = q.querySelectorAll("input, select, textarea");
      for (j = 0; j < ctls.length; j++) ctls[j].disabled = !visible;
      if (visible) {
        shown[key] = true;
        keys.push(key);
      }
    }
    for (i = 0; i < qs.length; i++) {
      q = qs[i];
      key = q.getAttribute("data-q");
      var req = shown[key] === true && q.hasAttribute("data-required");
      var when = q.getAttribute("data-required-when");
      if (!req && when && shown[key]) {
        req = JSON.parse(when).some(function (item) {
          return item.every(function (c) { return holds(root, shown, c); });
        });
      }
      var mark = q.querySelector(".q-req");
      if (mark) mark.hidden = !req;
      var targets = q.querySelectorAll(".q-ctl");
      for (j = 0; j < targets.length; j++) {
        if (req) targets[j].setAttribute("aria-required", "true");
        else targets[j].removeAttribute("aria-required");
      }
    }
    var list = root.querySelector("[data-svc-shown]");
    if (list) list.value = keys.join(",");
  }

  function setupPerson(root, input) {
    var url = input.getAttribute("data-search-url");
    var target = document.getElementById(input.getAttribute("data-person-target"));
    var results = document.getElementById(input.getAttribute("aria-controls"));
    // Without a URL, or with the server's list of matches, leave it be.
    if (!url || !target || target.type !== "hidden" || !results) return;
    var timer;
    var seq = 0;
    input.addEventListener("input", function () {
      target.value = "";
      clearTimeout(timer);
      var text = input.value.trim();
      if (text.length < 2) {
        results.textContent = "";
        return;
      }
      timer = setTimeout(function () { search(text); }, 200);
    });
    function search(text) {
      var mine = ++seq;
      var sep = url.indexOf("?") < 0 ? "?" : "&";
      fetch(url + sep + "q=" + encodeURIComponent(text), {
        headers: { Accept: "application/json" },
        credentials: "same-origin"
      }).then(function (r) {
        if (!r.ok) throw new Error("search: " + r.status);
        return r.json();
      }).then(function (people) {
        if (mine === seq) show(people);
      }).catch(function () {
        if (mine === seq) results.textContent = "";
      });
    }
    function show(people) {
      results.textContent = "";
      if (!people || !people.length) {
        var none = document.createElement("p");
        none.textContent = root.getAttribute("data-t-none");
        results.appendChild(none);
        return;
      }
      var ul = document.createElement("ul");
      ul.className = "q-people";
      people.forEach(function (p) {
        var li = document.createElement("li");
        var b = document.createElement("button");
        b.type = "button";
        b.className = "q-person";
        b.textContent = p.job_title ? p.name + ", " + p.job_title : p.name;
        b.addEventListener("click", function () {
          target.value = p.id;
          input.value = p.name;
          results.textContent = "";
          input.focus();
        });
        li.appendChild(b);
        ul.appendChild(li);
      });
      results.appendChild(ul);
    }
  }

  function setup(root) {
    var again = function () { update(root); };
    root.addEventListener("change", again);
    root.addEventListener("input", again);
    var searches = root.querySelectorAll("[data-person-search]");
    for (var i = 0; i < searches.length; i++) setupPerson(root, searches[i]);
    update(root);
  }

  function start() {
    var roots = document.querySelectorAll("[data-svc-form]");
    for (var i = 0; i < roots.length; i++) setup(roots[i]);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
