// A fix's result page while the fix is queued, run or graded: ask the API until the verdict exists, then
// load the page once. A timed refresh of the whole page would move a screen reader back to the top every
// few seconds, and would never stop for a fix that was cancelled.
(function () {
  "use strict";

  const ACTIVE = ["queued", "starting", "running", "grading"];
  const verdict = document.getElementById("verdict");
  const url = verdict && verdict.dataset.pollUrl;
  if (!url) return;

  async function poll() {
    let run;
    try {
      run = await window.faultlineApi.call("GET", url);
    } catch (error) {
      setTimeout(poll, 4000); // a passing network or server error: keep waiting, a little slower
      return;
    }
    if (run.graded || run.platform_fault) window.location.reload();
    else if (ACTIVE.includes(run.status)) setTimeout(poll, 2000);
  }

  setTimeout(poll, 2000);
})();
