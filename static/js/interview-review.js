// Interview playback: a slider and step buttons move through the session's frames (oldest first);
// the panel shows the state at that moment, rebuilt from the frames up to it.
(function () {
  "use strict";
  const dataNode = document.getElementById("playback-data");
  if (!dataNode) return;
  const data = JSON.parse(dataNode.textContent);
  const T = JSON.parse(document.getElementById("review-strings").textContent);
  const t = (key, values) => T[key].replace(/\{(\w+)\}/g, (_, name) => String(values && name in values ? values[name] : ""));
  const frames = data.frames;
  const $ = (id) => document.getElementById(id);
  const slider = $("timeline");
  const clock = (iso) => (iso ? new Date(iso).toLocaleTimeString() : "");

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([key, value]) => {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    });
    children.flat().forEach((child) => {
      if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
    });
    return node;
  }

  // The state after frames[0..index]: per item the latest draft, run, tool output and diagnosis.
  function stateAt(index) {
    const items = {};
    const messages = [];
    for (let i = 0; i <= index; i += 1) {
      const frame = frames[i];
      const item = frame.item === null ? null : (items[frame.item] = items[frame.item] || {});
      if (frame.type === "draft") item.draft = frame;
      else if (frame.type === "run" || frame.type === "fix") {
        item.run = frame;
        item.tool = null;
        if (frame.type === "fix") item.fix = frame;
      } else if (frame.type === "tool") item.tool = frame;
      else if (frame.type === "diagnosis") item.diagnosis = frame;
      else if (frame.type === "hint" || frame.type === "note" || frame.type === "time") messages.push(frame);
      else if (frame.type === "event" && item) item.event = frame;
    }
    return { items, messages };
  }

  function diffView(diffs) {
    if (!diffs.length) return el("p", { class: "meta" }, T.no_changes);
    return diffs.map((d) =>
      el("pre", { class: "diff" }, d.diff.split("\n").map((line) => {
        const kind = line.startsWith("+") && !line.startsWith("+++") ? "add"
          : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
        return el("span", { class: "diff-line " + kind }, line + "\n");
      })),
    );
  }

  function questionState(state) {
    if (!state || !state.draft) return [el("p", { class: "empty" }, T.no_draft)];
    const draft = state.draft;
    return [
      el("p", { class: "meta" }, clock(draft.at), " · ", t("draft_chars", { count: draft.text.length })),
      el("pre", { class: "draft" }, draft.text),
    ];
  }

  function labState(state) {
    const parts = [];
    if (!state || !state.run) parts.push(el("p", { class: "empty" }, T.no_run));
    else {
      const frame = state.run;
      const run = frame.run;
      const extra = frame.type === "fix" && run.graded ? " · " + t("fix_percent", { percent: run.fix_percent }) : "";
      parts.push(el("p", { class: "run-outcome " + (run.passed ? "ok" : "") }, clock(frame.at), " · ", frame.summary, extra));
      if (frame.type === "fix" && run.checks && run.checks.length) {
        parts.push(el("ul", { class: "checks-mini" }, run.checks.map((c) =>
          el("li", { class: c.passed ? "ok" : "fail" }, (c.passed ? "✓ " : "✗ ") + c.name + " — " + c.measured))));
      }
      parts.push(el("h3", {}, frame.diff_from === "original" ? T.diff_from_original : T.diff_from_run));
      parts.push(...diffView(frame.diff));
      if (frame.flags && frame.flags.length) {
        parts.push(el("h3", {}, T.flags), el("ul", { class: "flags" }, frame.flags.map((f) => el("li", {}, f.text))));
      }
    }
    if (state && state.tool) {
      parts.push(el("h3", {}, t("tool_output", { tool: state.tool.tool, status: state.tool.status })),
        el("pre", { class: "tool-output" }, state.tool.output));
    }
    if (state && state.diagnosis) {
      const d = state.diagnosis;
      parts.push(el("h3", {}, clock(d.at), " · ", t("diagnosis_score", { cause: d.root_cause_text, score: d.score })),
        el("blockquote", { class: "diagnosis-text" }, d.text));
    } else parts.push(el("p", { class: "empty" }, T.no_diagnosis));
    return parts;
  }

  function show(index) {
    index = Math.max(0, Math.min(frames.length - 1, index));
    slider.value = String(index);
    const frame = frames[index];
    const state = stateAt(index);
    $("playback-now").replaceChildren(
      el("strong", {}, t("step", { index: index + 1, count: frames.length })), " · ",
      el("time", { datetime: frame.at }, clock(frame.at)), " · ", frame.summary,
    );
    document.querySelectorAll(".playback-item").forEach((article) => {
      const position = Number(article.dataset.item);
      const itemState = state.items[position];
      const body = article.dataset.kind === "lab" ? labState(itemState) : questionState(itemState);
      article.querySelector(".item-state").replaceChildren(...body);
      article.classList.toggle("current", frame.item === position);
    });
    const list = document.querySelector(".playback-messages .message-list");
    list.replaceChildren(...(state.messages.length
      ? state.messages.map((m) => el("li", {}, el("time", { datetime: m.at }, clock(m.at)), " ", m.summary, m.text ? ": " + m.text : ""))
      : [el("li", { class: "empty" }, T.none_yet)]));
    document.querySelectorAll("#frame-list li").forEach((li) => li.classList.toggle("current", Number(li.dataset.index) === index));
    $("prev-step").disabled = index === 0;
    $("next-step").disabled = index === frames.length - 1;
  }

  slider.addEventListener("input", () => show(Number(slider.value)));
  $("prev-step").addEventListener("click", () => show(Number(slider.value) - 1));
  $("next-step").addEventListener("click", () => show(Number(slider.value) + 1));
  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, textarea, select") && event.target !== slider) return;
    if (event.key === "ArrowLeft" && event.target !== slider) show(Number(slider.value) - 1);
    if (event.key === "ArrowRight" && event.target !== slider) show(Number(slider.value) + 1);
  });
  show(frames.length - 1);
})();
