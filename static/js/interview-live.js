// Interviewer's live view: polls the live API about once a second and updates the page in place.
// Run output is fetched incrementally: the page sends run:log_seq:event_seq cursors for the runs it
// shows, so each poll carries only what is new.
(function () {
  "use strict";
  const { call } = window.faultlineApi;
  const root = document.getElementById("live");
  if (!root) return;
  const api = root.dataset.api;
  const pollMs = Number(root.dataset.pollMs) || 1000;
  const T = JSON.parse(document.getElementById("live-strings").textContent);
  const t = (key, values) => T[key].replace(/\{(\w+)\}/g, (_, name) => String(values && name in values ? values[name] : ""));
  const ACTIVE = ["queued", "starting", "running", "grading"];
  // Per lab item: which run is shown, how far its output was read, its chart.
  const follow = {}; // item id -> {run, pinned, logSeq, eventSeq, started, chart}
  let timer = null;



  const field = (section, name) => section.querySelector('[data-field="' + name + '"]');
  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }
  function setText(node, text) {
    if (node && node.textContent !== text) node.textContent = text;
  }
  function clock(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const pad = (n) => String(n).padStart(2, "0");
    return (h ? h + ":" + pad(m) : String(m)) + ":" + pad(s % 60);
  }
  const timeOf = (iso) => (iso ? new Date(iso).toLocaleTimeString() : "");

  // ---- charts ----------------------------------------------------------------------------
  function makeChart(canvas) {
    if (!canvas || typeof Chart === "undefined") return null;
    return new Chart(canvas, {
      type: "line",
      data: { datasets: [] },
      options: {
        animation: false,
        parsing: false,
        responsive: true,
        plugins: { legend: { display: true, position: "bottom" } },
        scales: { x: { type: "linear", title: { display: true, text: "step" } }, y: { type: "linear" } },
      },
    });
  }
  const COLOURS = ["#1f77b4", "#e67e22", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f", "#bcbd22"];
  function plotLoss(chart, events) {
    if (!chart) return;
    for (const event of events) {
      if (event.kind !== "metric" || event.data.step === undefined || event.data.step === null) continue;
      const loss = event.data.loss;
      const name = "rank " + event.rank;
      let set = chart.data.datasets.find((d) => d.label === name);
      if (!set) {
        const colour = COLOURS[(Number(event.rank) || 0) % COLOURS.length];
        set = { label: name, data: [], pointRadius: 0, borderWidth: 1.5, borderColor: colour, backgroundColor: colour };
        chart.data.datasets.push(set);
      }
      // Non-finite losses ("nan", "inf") leave a gap in the line.
      set.data.push({ x: event.data.step, y: typeof loss === "number" ? loss : null });
    }
    chart.update("none");
  }

  // ---- one lab item ------------------------------------------------------------------------
  function runLabel(run) {
    return t(run.kind === "fix" ? "fix" : "run", { id: run.id });
  }

  function showRun(section, item, runId, pinned) {
    const state = follow[item.id] || {};
    if (state.chart) state.chart.destroy();
    follow[item.id] = { run: runId, pinned: pinned, logSeq: 0, eventSeq: 0, started: false, chart: makeChart(field(section, "chart")) };
    field(section, "log").textContent = "";
    setText(field(section, "chart-run"), runId ? "(" + t("run", { id: runId }) + ")" : "");
  }

  function renderLab(section, item) {
    const attempt = item.attempt;
    setText(field(section, "lab-note"), attempt ? "" : t("not_opened_lab", { seed: item.seed }));
    field(section, "lab").hidden = !attempt;
    if (!attempt) return;
    const runs = attempt.runs;
    const latest = runs.length ? runs[runs.length - 1].id : null;
    let state = follow[item.id];
    if (!state || (!state.pinned && state.run !== latest)) {
      showRun(section, item, latest, false);
      state = follow[item.id];
    }
    // Runs, newest first, each with a button to show its log.
    const list = field(section, "runs");
    list.replaceChildren();
    if (!runs.length) list.append(el("li", t("no_runs"), "meta"));
    for (const run of runs.slice().reverse()) {
      const li = el("li", runLabel(run) + " · " + run.outcome + (run.duration_seconds ? " · " + run.duration_seconds.toFixed(1) + " s" : ""));
      li.className = ACTIVE.includes(run.status) ? "active" : "";
      if (run.id === state.run) {
        li.append(" ", el("span", t("following"), "badge"));
      } else {
        const button = el("button", t("follow"), "small secondary");
        button.type = "button";
        button.addEventListener("click", () => {
          showRun(section, item, run.id, run.id !== latest);
          poll();
        });
        li.append(" ", button);
      }
      list.append(li);
    }
    // New output of the shown run.
    for (const out of attempt.output) {
      if (out.run !== state.run) continue;
      const log = field(section, "log");
      const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 5;
      for (const chunk of out.log) if (chunk.seq > state.logSeq) log.append(chunk.text);
      if (atBottom) log.scrollTop = log.scrollHeight;
      plotLoss(state.chart, out.events.filter((e) => e.seq > state.eventSeq));
      state.logSeq = Math.max(state.logSeq, out.log_seq);
      state.eventSeq = Math.max(state.eventSeq, out.event_seq);
      state.started = true;
      if (out.more) state.more = true;
    }
    // Fix results with every check.
    const fixes = field(section, "fixes");
    fixes.replaceChildren();
    for (const fix of attempt.fixes) {
      const box = el("div", null, "fix-result");
      box.append(el("p", fix.graded ? t("fix_result", { id: fix.id, percent: fix.fix_percent, score: fix.score }) : runLabel(fix) + " · " + fix.outcome));
      if (fix.checks && fix.checks.length) {
        const ul = el("ul", null, "checks");
        for (const check of fix.checks) {
          const li = el("li", (check.passed ? "✓ " : "✗ ") + check.name + (check.measured !== undefined ? " — " + check.measured : "") + (check.detail ? " · " + check.detail : ""));
          li.className = check.passed ? "ok" : "fail";
          ul.append(li);
        }
        box.append(ul);
      }
      fixes.append(box);
    }
    if (!attempt.fixes.length) fixes.append(el("p", "–", "meta"));
    // Diagnosis.
    const diagnosis = field(section, "diagnosis");
    diagnosis.replaceChildren();
    const d = attempt.diagnosis;
    if (!d.root_cause) diagnosis.append(el("p", t("no_diagnosis"), "meta"));
    else {
      diagnosis.append(el("p", t("diagnosis", { cause: d.root_cause_text || d.root_cause, score: d.score === null ? "–" : d.score })));
      diagnosis.append(el("blockquote", d.text));
      const points = (d.detail && d.detail.points) || [];
      if (points.length) {
        const ul = el("ul");
        const zh = document.documentElement.lang.startsWith("zh");
        for (const point of points) {
          const label = point.label ? (zh ? point.label.zh : point.label.en) : point.key;
          ul.append(el("li", label + ": " + ((point.found || []).join(", ") || "–") + " / " + ((point.missing || []).join(", ") || "–")));
        }
        diagnosis.append(ul);
      }
    }
    // The draft the candidate is writing, while it differs from what they submitted.
    const draft = d.draft;
    if (draft && draft.saved_at && (draft.evidence !== d.text || draft.root_cause !== d.root_cause)) {
      diagnosis.append(el("p", t("diagnosis_draft", {
        time: new Date(draft.saved_at).toLocaleTimeString(), cause: draft.root_cause_text || "–",
      }), "meta"));
      diagnosis.append(el("blockquote", draft.evidence || "–", "draft"));
    }
    const s = attempt.score;
    setText(field(section, "score"), s ? t("score", { fix: s.fix, diagnosis: s.diagnosis === null ? "–" : s.diagnosis, hints: s.hints, score: s.score }) : "");
    const hints = field(section, "hints");
    hints.replaceChildren();
    for (const hint of attempt.hints) {
      hints.append(el("li", hint.text + " (−" + hint.cost + ", " + t(hint.released ? "hint_released" : "hint_not_released") + ")", hint.released ? "released" : "meta"));
    }
    const timeline = field(section, "timeline");
    timeline.replaceChildren();
    for (const entry of attempt.timeline) {
      let text;
      if (entry.type === "tool") text = t("tool", { tool: entry.tool, run: entry.run });
      else if (entry.type === "hint") text = t("hint_item", { n: entry.index + 1, cost: entry.cost });
      else if (entry.type === "diagnosis") text = t("diagnosis_item", { score: entry.score === null ? "–" : entry.score });
      else text = runLabel(entry) + " · " + entry.outcome + (entry.toggles && entry.toggles.length ? " · " + entry.toggles.join(", ") : "");
      timeline.append(el("li", timeOf(entry.at) + " · " + text));
    }
  }

  // ---- the whole page ----------------------------------------------------------------------
  function render(state) {
    setText(document.getElementById("live-status"), state.status_label);
    setText(
      document.getElementById("live-clock"),
      state.seconds_left === null ? t("not_started") : t("time_left", { time: clock(state.seconds_left) }),
    );
    setText(document.getElementById("live-updated"), t("updated", { time: timeOf(state.server_time) }));
    for (const item of state.items) {
      const section = document.getElementById("item-" + item.id);
      if (!section) continue;
      section.dataset.state = item.state;
      setText(field(section, "state"), item.state_label);
      let box = "";
      if (item.time_box_seconds !== null) {
        box = item.state === "not_opened" ? t("box_total", { time: clock(item.time_box_left) }) : t("box_left", { time: clock(item.time_box_left) });
      }
      setText(field(section, "box"), box);
      if (item.kind === "question") {
        setText(field(section, "draft"), item.draft || "");
        field(section, "draft").classList.toggle("empty", !item.draft);
        setText(field(section, "saved"), item.draft_saved_at ? t("saved_at", { time: timeOf(item.draft_saved_at) }) : t("no_draft"));
      } else {
        renderLab(section, item);
      }
    }
    const list = document.getElementById("live-messages");
    list.replaceChildren();
    if (!state.messages.length) list.append(el("li", t("no_messages"), "meta"));
    for (const message of state.messages) {
      let text = message.kind_label;
      if (message.text) text += ": " + message.text;
      else if (message.seconds) text += ": " + t("minutes_added", { minutes: Math.round(message.seconds / 60) });
      list.append(el("li", timeOf(message.at) + " · " + (message.actor ? message.actor + " · " : "") + text));
    }
  }

  function cursors() {
    const parts = [];
    for (const state of Object.values(follow)) {
      // A run shown for the first time without a cursor gets its log's tail; one picked by hand starts at 0.
      if (state.run && (state.started || state.pinned)) parts.push(state.run + ":" + state.logSeq + ":" + state.eventSeq);
    }
    return parts.join(",");
  }

  async function poll() {
    clearTimeout(timer);
    let wait = pollMs;
    try {
      const after = cursors();
      const state = await call("GET", api + (after ? "?after=" + encodeURIComponent(after) : ""));
      for (const f of Object.values(follow)) f.more = false;
      render(state);
      root.classList.remove("offline");
      if (Object.values(follow).some((f) => f.more)) wait = 50;
      if (["awaiting_scoring", "scored", "cancelled"].includes(state.status)) wait = pollMs * 5;
    } catch (error) {
      root.classList.add("offline");
      setText(document.getElementById("live-updated"), t("offline"));
      wait = pollMs * 3;
    }
    timer = setTimeout(poll, wait);
  }

  // Actions go through the API; the forms' own action is the no-script fallback.
  for (const form of root.querySelectorAll("form[data-action]")) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const result = form.parentElement.querySelector(".form-result");
      const body = {};
      for (const [name, value] of new FormData(form).entries()) if (name !== "csrfmiddlewaretoken") body[name] = value;
      if (body.minutes !== undefined) body.minutes = Number(body.minutes);
      if (body.item !== undefined) body.item = Number(body.item);
      try {
        await call("POST", api + form.dataset.action + "/", body);
        setText(result, t("sent"));
        result.classList.remove("error");
        const text = form.querySelector('input[name="text"]');
        if (text) text.value = "";
        poll();
      } catch (error) {
        setText(result, "⚠ " + error.message);
        result.classList.add("error");
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    render(JSON.parse(document.getElementById("live-data").textContent));
    timer = setTimeout(poll, pollMs);
  });
})();
