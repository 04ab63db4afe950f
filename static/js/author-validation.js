// Live validation table: polls the job's JSON and adds rows as runs finish (seed by seed), with a progress bar
// and a cancel button. A failing row links to its run's log and events.
(function () {
  "use strict";
  const root = document.getElementById("validation");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const T = JSON.parse($("ui-strings").textContent);
  const t = (key, values) => T[key].replace(/\{(\w+)\}/g, (_, name) => String(values && name in values ? values[name] : ""));
  let job = JSON.parse($("job-data").textContent);
  // variant/seed → [the row's JSON when drawn, its <tr>]: a revised row is drawn again in its place.
  const shown = new Map();

  const { csrf } = window.faultlineApi;

  function cell(row, text, className) {
    const td = document.createElement("td");
    if (className) td.className = className;
    if (text instanceof Node) td.appendChild(text);
    else td.textContent = text;
    row.appendChild(td);
    return td;
  }

  function addRow(data) {
    const key = data.variant + "/" + data.seed;
    const json = JSON.stringify(data);
    const before = shown.get(key);
    if (before && before[0] === json) return;
    const tr = document.createElement("tr");
    tr.className = data.ok ? "row-ok" : "row-bad";
    tr.dataset.variant = data.variant;
    tr.dataset.seed = data.seed;
    cell(tr, data.variant);
    cell(tr, String(data.seed));
    cell(tr, t(data.expected));
    const verdict = (data.outcome.startsWith("error") ? data.outcome : t(data.outcome)) + " — " + (data.ok ? t("ok") : t("not_ok"));
    cell(tr, verdict + (data.problem ? " (" + data.problem + ")" : ""), data.ok ? "ok" : "bad");
    const checks = document.createElement("ul");
    checks.className = "check-list";
    (data.checks || []).forEach((c) => {
      const li = document.createElement("li");
      li.className = c.passed ? "ok" : "bad";
      li.textContent = (c.passed ? "✓ " : "✗ ") + c.name + ": " + c.measured + (c.threshold ? " (" + c.threshold + ")" : "");
      checks.appendChild(li);
    });
    cell(tr, checks);
    cell(tr, data.seconds + " s");
    const link = document.createElement("a");
    if (data.run_id) {
      link.href = root.dataset.runUrl.replace("/0/", "/" + data.run_id + "/");
      link.textContent = t("log");
      if (!data.ok) link.className = "run-link";
    }
    cell(tr, link);
    if (before) before[1].replaceWith(tr);
    else $("validation-rows").appendChild(tr);
    shown.set(key, [json, tr]);
  }

  function render() {
    job.rows.forEach(addRow);
    $("job-progress").value = job.percent;
    $("job-count").textContent = t("runs", { done: job.done_runs, total: job.total_runs });
    $("job-status").textContent = job.status_label;
    $("job-status").className = "status-" + job.status;
    $("cancel-btn").hidden = job.finished;
    if (job.message) {
      $("job-message").textContent = job.message;
      $("job-message").hidden = false;
    }
  }

  async function poll() {
    try {
      const response = await fetch(root.dataset.api, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (response.ok) job = await response.json();
    } catch (error) {
      /* a missed poll is retried */
    }
    render();
    if (!job.finished) setTimeout(poll, 1000);
  }

  $("cancel-btn").addEventListener("click", async () => {
    $("cancel-btn").disabled = true;
    const response = await fetch(root.dataset.api + "cancel/", {
      method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": csrf(), Accept: "application/json" },
    });
    if (response.ok) job = await response.json();
    render();
  });

  render();
  if (!job.finished) setTimeout(poll, 1000);
})();
