// A fix's result page while the fix is queued, run or graded: ask the API until the verdict exists, showing
// the stage it reports in a polite live region, then load the page once. A timed refresh of the whole page
// would move a screen reader back to the top every few seconds, and would never stop for a cancelled fix.
(function () {
  "use strict";

  const ACTIVE = ["queued", "starting", "running", "grading"];
  const verdict = document.getElementById("verdict");
  const stage = document.getElementById("fix-stage");
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
    if (run.graded || run.platform_fault) {
      window.location.reload();
      return;
    }
    // An ended run has no stage (a cancelled fix): its outcome says what became of it.
    const text = run.stage || run.outcome;
    // Only a changed text is written: rewriting the same words would have them announced again.
    if (stage && text && stage.textContent !== text) stage.textContent = text;
    // Grading takes seconds and the verdict is what the candidate is waiting for: ask more often then.
    if (ACTIVE.includes(run.status)) setTimeout(poll, run.status === "grading" ? 400 : 1500);
  }

  setTimeout(poll, 500);
})();
