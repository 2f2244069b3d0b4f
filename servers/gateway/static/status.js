// The gateway's status page (servers/gateway/status.py): refreshes the live part without reloading the page.
// Only while refresh is on, the page is visible and the keyboard focus is not inside the part being replaced.
"use strict";
(function () {
  const live = document.getElementById("live");
  const toggle = document.getElementById("refresh");
  if (!live || !toggle) {
    return;
  }
  const seconds = Number(toggle.dataset.seconds) || 5;
  let busy = false;

  async function refresh() {
    if (busy || !toggle.checked || document.hidden || live.contains(document.activeElement)) {
      return;
    }
    busy = true;
    try {
      const response = await fetch("/status/live", { credentials: "same-origin", cache: "no-store" });
      if (response.status === 401) {
        window.location.reload();
        return;
      }
      if (response.ok) {
        live.innerHTML = await response.text();
      }
    } catch (error) {
      // the gateway may be restarting: the next tick tries again
    } finally {
      busy = false;
    }
  }

  window.setInterval(refresh, seconds * 1000);
  document.addEventListener("visibilitychange", refresh);
})();
