// pginbox console: optional enhancements. Every page works without it.
(function () {
  "use strict";
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName)) { return; }
    if (e.key === "/") {
      var f = document.querySelector("#filters input[name=provider]");
      if (f) { e.preventDefault(); f.focus(); }
    } else if (e.key === "r") {
      location.reload();
    } else if (e.key === "e" && window.__g) {
      location.href = "/events";
    }
    window.__g = e.key === "g";
  });
  // The overview refreshes itself every 15 s while visible.
  if (document.body.dataset.refresh) {
    setInterval(function () {
      if (document.visibilityState === "visible" && !(document.activeElement && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(document.activeElement.tagName))) { location.reload(); }
    }, Number(document.body.dataset.refresh) * 1000);
  }
  // Bulk replay asks once more before it runs.
  var bulk = document.getElementById("bulk-confirm");
  if (bulk) {
    bulk.addEventListener("submit", function (e) {
      var n = document.getElementById("bulk-count");
      if (n && !window.confirm("Replay " + n.textContent + " events?")) { e.preventDefault(); }
    });
  }
})();
