// Lab workspace: editor, runs with live log and charts, tools, diagnosis, hints, timeline.
// Everything goes through the JSON API, the same one scripts and tests use.
(function () {
  "use strict";
  const { call } = window.faultlineApi;
  const root = document.getElementById("workspace");
  if (!root) return;
  const api = root.dataset.api;
  let attempt = JSON.parse(document.getElementById("attempt-data").textContent);
  const T = JSON.parse(document.getElementById("ui-strings").textContent);
  // Times in the page's language (the browser's own locale may differ from the one chosen on the site).
  const LANG = document.documentElement.lang || undefined;
  // Fill {name} slots of a translated string.
  const t = (key, values) => T[key].replace(/\{(\w+)\}/g, (_, name) => String(values && name in values ? values[name] : ""));
  let files = Object.assign({}, attempt.files);
  let current = attempt.entry in files ? attempt.entry : Object.keys(files)[0];
  let dirty = false;
  let live = null; // {id, logSeq, eventSeq, timer}
  const $ = (id) => document.getElementById(id);
  const input = $("code-input");



  // ---- editor -------------------------------------------------------------------------
  // CodeMirror (static/vendor/codemirror/faultline-editor.js, built by `manage.py vendorstatic`) takes
  // the textarea's place when its bundle loaded. The textarea stays the copy that saving, running and
  // tab switches read, kept equal to the editor on every change, so without the bundle the page still
  // edits and submits through the plain field.
  const editor = window.FaultlineEditor
    ? window.FaultlineEditor.create($("code-editor"), {
        label: input.getAttribute("aria-label"),
        describedBy: "editor-help",
        onChange: (name, text) => {
          input.value = text;
          edited();
        },
      })
    : null;
  if (editor) input.hidden = true;

  function edited() {
    files[current] = input.value;
    dirty = true;
    $("save-state").textContent = t("unsaved");
    if (editor && !$("diff-view").hidden) scheduleDiff();
  }

  function renderTabs() {
    const tabs = $("file-tabs");
    tabs.replaceChildren();
    Object.keys(files).sort().forEach((name) => {
      const tab = document.createElement("button");
      tab.type = "button";
      tab.role = "tab";
      tab.textContent = name;
      tab.setAttribute("aria-selected", String(name === current));
      tab.addEventListener("click", () => {
        files[current] = input.value;
        current = name;
        openFile();
      });
      tabs.appendChild(tab);
    });
  }

  function openFile() {
    input.value = files[current] || "";
    if (editor) editor.open(current, input.value);
    renderTabs();
  }

  // Opens `name` (a path as the attempt names it) with the cursor at the start of `line`.
  function goToLine(name, line) {
    if (!(name in files)) return;
    if (name !== current) {
      files[current] = input.value;
      current = name;
      openFile();
    }
    if (editor) {
      editor.goToLine(line);
      return;
    }
    const lines = input.value.split("\n");
    const at = lines.slice(0, Math.max(0, Math.min(line, lines.length) - 1)).reduce((n, l) => n + l.length + 1, 0);
    input.focus();
    input.setSelectionRange(at, at);
  }

  input.addEventListener("input", edited);
  // The plain textarea follows the editor's keys: Tab indents, Escape then Tab leaves.
  let escaped = false;
  input.addEventListener("keydown", (event) => {
    if (event.key === "Tab" && !event.shiftKey && !escaped) {
      event.preventDefault();
      const start = input.selectionStart;
      input.setRangeText("    ", start, input.selectionEnd, "end");
      input.dispatchEvent(new Event("input"));
    }
    escaped = event.key === "Escape";
  });

  async function save() {
    files[current] = input.value;
    const data = await call("PUT", api + "files/", { files: files });
    files = Object.assign({}, data.files);
    dirty = false;
    $("save-state").textContent = t("saved");
  }

  $("save-btn").addEventListener("click", () => save().catch(showError));
  $("reset-btn").addEventListener("click", async () => {
    if (!window.confirm(t("confirm_reset"))) return;
    const data = await call("PUT", api + "files/", { reset: true }).catch(showError);
    if (!data) return;
    files = Object.assign({}, data.files);
    current = attempt.entry;
    dirty = false;
    if (editor) editor.forget();
    openFile();
    if (editor && !$("diff-view").hidden) showDiff();
  });

  // Side by side, original on the left, for each file that differs. It is drawn from the page's copy
  // of the original program and follows the edits while it is open.
  const originals = JSON.parse($("original-files").textContent);
  let diffViews = [];
  let diffTimer = null;
  function scheduleDiff() {
    window.clearTimeout(diffTimer);
    diffTimer = window.setTimeout(showDiff, 400);
  }
  function showDiff() {
    const view = $("diff-view");
    for (const merge of diffViews) merge.destroy();
    diffViews = [];
    view.replaceChildren();
    const names = Array.from(new Set(Object.keys(originals).concat(Object.keys(files)))).sort();
    for (const name of names) {
      const before = originals[name] || "";
      const after = files[name] || "";
      if (before === after) continue;
      const heading = document.createElement("h3");
      heading.textContent = name;
      const box = document.createElement("div");
      box.className = "diff-pair";
      view.append(heading, box);
      diffViews.push(
        window.FaultlineEditor.diff(box, {
          name: name,
          original: before,
          modified: after,
          originalLabel: view.dataset.originalLabel + ": " + name,
          modifiedLabel: view.dataset.yoursLabel + ": " + name,
        }),
      );
    }
    if (!diffViews.length) {
      const empty = document.createElement("p");
      empty.className = "empty";
      empty.textContent = view.dataset.empty;
      view.append(empty);
    }
  }
  $("diff-btn").addEventListener("click", async () => {
    const view = $("diff-view");
    if (!view.hidden) {
      view.hidden = true;
      return;
    }
    try {
      view.hidden = false; // the merge view measures its lines, which needs a visible box
      if (editor) {
        files[current] = input.value;
        showDiff();
        return;
      }
      // Without the bundle: the server's unified diff of the saved files.
      if (dirty) await save();
      const response = await fetch(root.dataset.diffUrl, { credentials: "same-origin" });
      view.innerHTML = await response.text();
    } catch (error) {
      showError(error);
    }
  });

  // ---- runs ---------------------------------------------------------------------------
  // Charts draw what the program reports. Non-finite values cannot be plotted as numbers, so each
  // one becomes a cross marker at its step, and the first one is named under the chart; a range
  // over 1e4 switches the y-axis to log scale unless the candidate chose a scale.
  const charts = {};
  const LOG_RANGE = 1e4;
  function makeChart(key, label) {
    const canvas = $("chart-" + key);
    if (!canvas || typeof Chart === "undefined") return null;
    const chart = new Chart(canvas, {
      type: "line",
      data: { datasets: [] },
      options: {
        animation: false,
        parsing: false,
        responsive: true,
        plugins: { legend: { display: true, position: "bottom" } },
        scales: { x: { type: "linear", title: { display: true, text: label } }, y: { type: "linear" } },
      },
    });
    chart.$fl = { key: key, min: Infinity, max: -Infinity, userScale: false, firstBad: null, last: {} };
    const toggle = $("log-" + key);
    if (toggle) {
      toggle.checked = false;
      toggle.onchange = () => {
        chart.$fl.userScale = true;
        setScale(chart, toggle.checked);
        chart.update("none");
      };
    }
    const note = $("nonfinite-" + key);
    if (note) {
      note.hidden = true;
      note.textContent = "";
    }
    return chart;
  }

  function setScale(chart, log) {
    chart.options.scales.y.type = log ? "logarithmic" : "linear";
    const toggle = $("log-" + chart.$fl.key);
    if (toggle) toggle.checked = log;
  }

  function resetCharts() {
    for (const chart of Object.values(charts)) if (chart) chart.destroy();
    charts.loss = makeChart("loss", "step");
    charts.grad = makeChart("grad", "step");
    charts.memory = makeChart("memory", "s");
    charts.throughput = makeChart("throughput", "step");
  }

  // One colour per rank (and dashes for a rank's second series), so ranks stay apart when they overlap.
  const RANK_COLOURS = ["#1f77b4", "#e67e22", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f", "#bcbd22"];
  function colourOf(name) {
    const match = /rank (\d+)/.exec(name);
    return RANK_COLOURS[(match ? Number(match[1]) : 0) % RANK_COLOURS.length];
  }
  function series(chart, name, marker) {
    let set = chart.data.datasets.find((d) => d.label === name);
    if (!set) {
      const colour = colourOf(name);
      set = marker
        ? { label: name, data: [], showLine: false, pointStyle: "crossRot", pointRadius: 5, borderWidth: 1.5, borderColor: "#c0392b" }
        : { label: name, data: [], pointRadius: 0, borderWidth: 1.5, borderColor: colour, backgroundColor: colour };
      if (!marker && / CUDA reserved$/.test(name)) set.borderDash = [5, 3];
      chart.data.datasets.push(set);
    }
    return set.data;
  }

  function numeric(value) {
    if (typeof value === "number") return value;
    if (value === "nan") return NaN;
    if (value === "inf") return Infinity;
    if (value === "-inf") return -Infinity;
    return null;
  }

  function plot(chart, rank, step, value) {
    if (!chart || value === null) return;
    const state = chart.$fl;
    if (Number.isFinite(value)) {
      series(chart, rank).push({ x: step, y: value });
      state.last[rank] = value;
      if (value > 0) state.min = Math.min(state.min, value);
      state.max = Math.max(state.max, value);
      if (!state.userScale && state.min > 0 && state.max / state.min > LOG_RANGE) setScale(chart, true);
      return;
    }
    // Drawn at the rank's last finite height (or the top so far), with a gap in the line.
    const height = state.last[rank] !== undefined ? state.last[rank] : Number.isFinite(state.max) ? state.max : 1;
    series(chart, rank).push({ x: step, y: null });
    series(chart, rank + " " + String(value), true).push({ x: step, y: height });
    if (!state.firstBad || step < state.firstBad.step) {
      state.firstBad = { step: step, rank: rank, value: String(value) };
      const note = $("nonfinite-" + state.key);
      if (note) {
        note.textContent = t("first_nonfinite", { value: String(value), step: step, rank: rank });
        note.hidden = false;
      }
    }
  }

  const lastStep = {};
  function addEvents(events) {
    for (const event of events) {
      const rank = "rank " + event.rank;
      const d = event.data;
      if (event.kind === "metric" && d.step !== undefined && d.step !== null) {
        plot(charts.loss, rank, d.step, numeric(d.loss));
        plot(charts.grad, rank, d.step, numeric(d.grad_norm));
        let speed = numeric(d.throughput);
        // Programs that report no throughput still have a step rate: steps between reports over the
        // seconds between them, timed as the reports arrive.
        const previous = lastStep[rank];
        if (speed === null && previous && event.t > previous.t && d.step > previous.step) {
          speed = (d.step - previous.step) / (event.t - previous.t);
          if (charts.throughput) charts.throughput.options.scales.y.title = { display: true, text: t("steps_per_second") };
        }
        lastStep[rank] = { step: d.step, t: event.t };
        if (charts.throughput && speed !== null && Number.isFinite(speed)) series(charts.throughput, rank).push({ x: d.step, y: speed });
      } else if (event.kind === "memory" && charts.memory) {
        series(charts.memory, rank).push({ x: event.t, y: (d.pss_bytes || d.rss_bytes || 0) / 1048576 });
      } else if (event.kind === "cuda_memory" && charts.memory) {
        series(charts.memory, rank + " CUDA allocated").push({ x: event.t, y: d.allocated_bytes / 1048576 });
        series(charts.memory, rank + " CUDA reserved").push({ x: event.t, y: d.reserved_bytes / 1048576 });
      }
    }
    for (const chart of Object.values(charts)) if (chart) chart.update("none");
  }

  const ACTIVE = ["queued", "starting", "running", "grading"];
  function describe(run) {
    // While it waits, runs or is graded, the server says where it stands (queue position, check k of n).
    if (run.stage && ACTIVE.includes(run.status)) return run.stage;
    if (run.status === "queued") return run.queue_position ? t("queued", { ahead: run.queue_position }) : t("queued_next");
    if (run.status === "error") return t("platform_error", { error: run.error });
    let text = run.outcome;
    if (run.duration_seconds) text += t("took", { seconds: run.duration_seconds.toFixed(1) });
    const codes = Object.entries(run.exit_codes || {});
    if (codes.length) text += t("exit_codes", { codes: codes.map(([r, c]) => "rank " + r + ": " + c).join(", ") });
    return text;
  }

  function setRunning(active, run) {
    $("run-btn").disabled = active;
    $("fix-btn").disabled = active;
    $("cancel-btn").disabled = !active;
    for (const id of ["stacks-btn", "memory-btn"]) if ($(id)) $(id).disabled = !active;
    // Only a plain run pauses; a fix is graded straight through.
    const pausable = active && run && run.kind !== "fix" && ["queued", "starting", "running"].includes(run.status);
    const paused = pausable && Boolean(run.paused);
    $("pause-btn").disabled = !pausable || paused;
    $("step-btn").disabled = !paused;
    $("resume-btn").disabled = !paused;
  }

  // The conditions under which the next plain run stops; empty fields are not sent.
  function pauseConditions() {
    const conditions = {};
    if ($("pause-step").value !== "") conditions.at_step = Number($("pause-step").value);
    if ($("pause-nonfinite").checked) conditions.on_nonfinite = true;
    if ($("pause-memory").value !== "") conditions.memory_mib = Number($("pause-memory").value);
    return conditions;
  }

  async function poll() {
    if (!live) return;
    let data;
    try {
      data = await call("GET", api + "runs/" + live.id + "/?log_after=" + live.logSeq + "&events_after=" + live.eventSeq);
    } catch (error) {
      live.timer = setTimeout(poll, 2000);
      return;
    }
    const log = $("run-log");
    const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 5;
    for (const chunk of data.log) {
      log.append(chunk.text);
      live.logSeq = chunk.seq;
    }
    if (atBottom) log.scrollTop = log.scrollHeight;
    if (data.events.length) {
      addEvents(data.events);
      live.eventSeq = data.events[data.events.length - 1].seq;
    }
    const state = describe(data);
    // Unchanged words are not rewritten: the live region would announce them again every second.
    if ($("run-state").textContent !== state) $("run-state").textContent = state;
    showDiagnostics(data.diagnostics);
    const active = ACTIVE.includes(data.status);
    setRunning(active, data);
    if (active || data.events.length === 3000) {
      live.timer = setTimeout(poll, 1000);
    } else {
      const finished = live;
      live = null;
      refreshAttempt();
      if (data.kind === "fix") {
        window.location.href = root.dataset.resultUrl.replace(/\/0\/$/, "/" + finished.id + "/");
      }
    }
  }

  // A frame names a file and line as faulthandler writes it (`File "/…/train.py", line 42`) or as py-spy
  // and tracemalloc do (`train.py:42`). Frames in the attempt's own files become buttons that open the
  // file at that line; library frames stay text.
  const FRAME_RE = /File "([^"\n]+)", line (\d+)|([\w./-]+\.py):(\d+)/g;
  function fileNamed(path) {
    if (path in files) return path;
    return Object.keys(files).find((name) => path.endsWith("/" + name)) || null;
  }
  function linkFrames(pre, text) {
    let at = 0;
    for (const match of text.matchAll(FRAME_RE)) {
      const name = fileNamed(match[1] || match[3]);
      if (!name) continue;
      const line = Number(match[2] || match[4]);
      const button = document.createElement("button");
      button.type = "button";
      button.className = "frame-link";
      button.textContent = match[0];
      button.dataset.file = name;
      button.dataset.line = String(line);
      button.addEventListener("click", () => goToLine(name, line));
      pre.append(text.slice(at, match.index), button);
      at = match.index + match[0].length;
    }
    pre.append(text.slice(at));
  }

  // Redrawn only when a dump changed: polling every second would otherwise take the focus (and the
  // scroll position) away from a frame the keyboard is on.
  let shownDiagnostics = "";
  // A tool output's title: the tool's name, and for the automatic first-non-finite capture what it found
  // ("rank 0: first non-finite loss at step N in layer X", the output's first lines, written by the runner).
  const NONFINITE_RE = /^rank (\S+): first non-finite loss at step (\d+) (?:in layer (.+)|outside any module's forward)$/;
  function toolTitle(kind, output) {
    const name = T["tool_" + kind] ? t("tool_" + kind) : kind;
    const text = output || "";
    const found = [];
    for (const line of text.split("\n")) {
      const m = NONFINITE_RE.exec(line);
      if (!m) break;
      found.push(m[3] ? t("nonfinite_in_layer", { rank: m[1], step: m[2], layer: m[3] }) : t("nonfinite_outside", { rank: m[1], step: m[2] }));
    }
    if (found.length) return name + ": " + found.join("; ") + " · " + t("captured_in_program");
    if (text.startsWith("Captured automatically inside the program")) return name + " · " + t("captured_in_program");
    if (text.startsWith("Captured automatically at the deadline")) return name + " · " + t("captured_at_deadline");
    return name;
  }

  // A tool's state as the page's language says it (the API keeps pending | done | failed).
  function toolStatus(status) {
    return T["tool_status_" + status] ? t("tool_status_" + status) : status;
  }

  function showDiagnostics(diagnostics) {
    const shown = JSON.stringify(diagnostics);
    if (shown === shownDiagnostics) return;
    shownDiagnostics = shown;
    const box = $("tool-output");
    box.replaceChildren();
    for (const d of diagnostics) {
      const details = document.createElement("details");
      details.open = true;
      const summary = document.createElement("summary");
      summary.textContent = toolTitle(d.kind, d.output) + " · " + toolStatus(d.status);
      const pre = document.createElement("pre");
      pre.className = "tool-output";
      pre.tabIndex = 0; // a long dump scrolls inside its box, which the keyboard must reach too
      linkFrames(pre, d.output || "…");
      details.append(summary, pre);
      box.appendChild(details);
    }
  }

  async function start(fix) {
    const toggles = Array.from(document.querySelectorAll("input[name=toggle]:checked")).map((el) => el.value);
    files[current] = input.value;
    try {
      const body = { files: files, toggles: toggles, fix: fix };
      if (!fix) body.pause = pauseConditions();
      const run = await call("POST", api + "runs/", body);
      dirty = false;
      $("save-state").textContent = t("saved");
      follow(run);
    } catch (error) {
      showError(error);
    }
  }

  function follow(run) {
    if (live && live.timer) clearTimeout(live.timer);
    $("run-log").textContent = "";
    $("log-find-state").textContent = "";
    searchFrom = 0;
    $("tool-output").replaceChildren();
    shownDiagnostics = "";
    resetCharts();
    for (const key of Object.keys(lastStep)) delete lastStep[key];
    live = { id: run.id, logSeq: 0, eventSeq: 0, timer: null };
    $("run-state").textContent = describe(run);
    setRunning(true, run);
    poll();
  }

  // ---- log search --------------------------------------------------------------------
  // The log is one growing text node once normalised; a match is selected and scrolled into view.
  const ERROR_RE = /Traceback \(most recent call last\)|\b\w*(Error|Exception)\b|\bKilled\b|\bnan\b/;
  let searchFrom = 0;
  function showMatch(start, length) {
    const log = $("run-log");
    log.normalize();
    const node = log.firstChild;
    if (!node || start < 0) {
      $("log-find-state").textContent = t("log_not_found");
      return false;
    }
    const range = document.createRange();
    range.setStart(node, start);
    range.setEnd(node, start + length);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    const box = range.getBoundingClientRect();
    const frame = log.getBoundingClientRect();
    log.scrollTop += box.top - frame.top - log.clientHeight / 3;
    const line = log.textContent.slice(0, start).split("\n").length;
    $("log-find-state").textContent = t("log_line", { line: line });
    return true;
  }
  function findNext() {
    const query = $("log-search").value;
    if (!query) return;
    const text = $("run-log").textContent;
    let at = text.toLowerCase().indexOf(query.toLowerCase(), searchFrom);
    if (at < 0 && searchFrom > 0) at = text.toLowerCase().indexOf(query.toLowerCase());
    if (showMatch(at, query.length)) searchFrom = at + query.length;
  }
  $("log-find").addEventListener("click", findNext);
  $("log-search").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      findNext();
    }
  });
  $("log-search").addEventListener("input", () => {
    searchFrom = 0;
  });
  $("log-first-error").addEventListener("click", () => {
    const match = ERROR_RE.exec($("run-log").textContent);
    showMatch(match ? match.index : -1, match ? match[0].length : 0);
  });

  $("run-btn").addEventListener("click", () => start(false));
  $("fix-btn").addEventListener("click", () => start(true));
  $("cancel-btn").addEventListener("click", () => {
    if (live) call("POST", api + "runs/" + live.id + "/cancel/").catch(showError);
  });
  for (const tool of ["stacks", "memory", "pause", "step", "resume"]) {
    const button = $(tool + "-btn");
    if (button) {
      button.addEventListener("click", () => {
        if (live) call("POST", api + "runs/" + live.id + "/" + tool + "/").catch(showError);
      });
    }
  }

  // ---- diagnosis, hints, score, timeline ---------------------------------------------
  $("diagnosis-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const choice = document.querySelector("input[name=root_cause]:checked");
    try {
      attempt = await call("POST", api + "diagnosis/", {
        root_cause: choice ? choice.value : "",
        evidence: $("evidence").value,
      });
      renderAttempt();
    } catch (error) {
      showError(error);
    }
  });

  // The diagnosis being written is kept (never scored) a few seconds after each change and on blur,
  // so a reload loses nothing and, in an interview, the interviewers can follow it.
  let draftTimer = null;
  async function saveDiagnosisDraft() {
    window.clearTimeout(draftTimer);
    draftTimer = null;
    const choice = document.querySelector("input[name=root_cause]:checked");
    try {
      await call("PUT", api + "diagnosis/draft/", { root_cause: choice ? choice.value : "", evidence: $("evidence").value });
      $("diagnosis-draft-state").textContent = t("draft_saved", { time: new Date().toLocaleTimeString(LANG) });
    } catch (error) {
      $("diagnosis-draft-state").textContent = "⚠ " + error.message;
    }
  }
  function diagnosisChanged() {
    window.clearTimeout(draftTimer);
    draftTimer = window.setTimeout(saveDiagnosisDraft, 3000);
  }
  $("evidence").addEventListener("input", diagnosisChanged);
  $("evidence").addEventListener("blur", () => { if (draftTimer) saveDiagnosisDraft(); });
  document.querySelectorAll("input[name=root_cause]").forEach((radio) => radio.addEventListener("change", diagnosisChanged));

  function renderDiagnosis() {
    const box = $("diagnosis-result");
    box.replaceChildren();
    const d = attempt.diagnosis;
    if (attempt.sealed && d.root_cause) {
      // Interview: the verdict is for the interviewers; the candidate sees that it was received.
      const p = document.createElement("p");
      p.className = "diagnosis-score";
      p.textContent = t("diagnosis_received");
      box.append(p);
      return;
    }
    if (d.score === null || d.score === undefined) return;
    const p = document.createElement("p");
    p.className = "diagnosis-score";
    p.textContent = t("diagnosis_score", {
      score: d.score,
      verdict: t(d.detail.root_cause_correct ? "cause_correct" : "cause_wrong"),
      percent: d.detail.evidence_percent,
    });
    const list = document.createElement("div");
    list.innerHTML = d.feedback_html || ""; // rendered by the server's shared template, escaped there
    box.append(p, list);
  }

  function renderHints() {
    const list = $("hints");
    list.replaceChildren();
    for (const hint of attempt.hints) {
      const li = document.createElement("li");
      if (hint.text) {
        li.textContent = attempt.interview ? hint.text : hint.text + " (−" + hint.cost + ")";
      } else if (attempt.interview) {
        continue;
      } else {
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = t("reveal_hint", { n: hint.index + 1, cost: hint.cost });
        button.addEventListener("click", async () => {
          try {
            attempt = await call("POST", api + "hints/" + hint.index + "/");
            renderAttempt();
          } catch (error) {
            showError(error);
          }
        });
        li.appendChild(button);
      }
      list.appendChild(li);
    }
  }

  async function renderTimeline() {
    const items = await call("GET", api + "timeline/").catch(() => []);
    const list = $("timeline");
    list.replaceChildren();
    for (const item of items) {
      const li = document.createElement("li");
      const when = new Date(item.at).toLocaleTimeString(LANG);
      if (item.type === "tool") {
        // Linked to its run: opening the run lists this output, stacks and statistics included, below the log.
        const text = when + " · " + toolTitle(item.tool, item.output) + " (" + toolStatus(item.status) + ")";
        const owner = items.find((other) => (other.type === "run" || other.type === "fix") && other.id === item.run);
        if (owner) li.appendChild(runLink(owner, text));
        else li.textContent = text;
      } else if (item.type === "hint") li.textContent = when + " · " + t("hint_item", { n: item.index + 1, cost: item.cost });
      else if (item.type === "diagnosis")
        li.textContent = when + " · " + (item.score === null ? t("diagnosis_sent") : t("diagnosis_item", { score: item.score }));
      else li.appendChild(runLink(item, when + " · " + describe(item)));
      list.appendChild(li);
    }
  }

  function runLink(item, text) {
    const link = document.createElement("a");
    link.href = "#";
    link.textContent = text;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      if (item.type === "fix") window.location.href = root.dataset.resultUrl.replace(/\/0\/$/, "/" + item.id + "/");
      else follow(item);
    });
    return link;
  }

  function renderAttempt() {
    renderDiagnosis();
    renderHints();
    const s = attempt.score;
    $("score-line").textContent = s
      ? t("score_line", { fix: s.fix, diagnosis: s.diagnosis, hints: s.hints, score: s.score }) +
        (attempt.best_score !== null ? t("best", { best: attempt.best_score }) : "")
      : t("scored_by_interviewers");
    $("attempt-status").textContent = t(attempt.status === "passed" ? "fixed" : "in_progress");
    renderTimeline();
  }

  async function refreshAttempt() {
    attempt = await call("GET", api).catch(() => attempt);
    renderAttempt();
  }

  function showError(error) {
    $("run-state").textContent = "⚠ " + error.message;
    $("run-state").classList.add("error");
    setTimeout(() => $("run-state").classList.remove("error"), 4000);
  }

  window.addEventListener("beforeunload", (event) => {
    if (dirty) event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", () => {
    openFile();
    resetCharts();
    renderAttempt();
  });
})();
