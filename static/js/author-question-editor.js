// Question editor: checks the form on the server as the author types (the bank's own parser, previews
// rendered and sanitised as candidates see them, the rubric check), and adds or removes rubric points,
// misconceptions and sample answers. Saving is the form's own POST, so the page works without this file.
(function () {
  "use strict";
  const form = document.getElementById("question-form");
  if (!form) return;
  const T = JSON.parse(document.getElementById("question-editor-strings").textContent);
  const $ = (id) => document.getElementById(id);
  const DELAY_MS = 400;
  let timer = null;
  let sequence = 0; // only the newest answer is shown, whatever order answers arrive in
  let dirty = false;

  function csrf() {
    const field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function schedule() {
    window.clearTimeout(timer);
    timer = window.setTimeout(check, DELAY_MS);
    $("check-state").textContent = T.checking;
  }

  async function check() {
    const mine = ++sequence;
    let data;
    try {
      const response = await fetch(form.dataset.checkUrl, {
        method: "POST",
        headers: { "X-CSRFToken": csrf(), Accept: "application/json" },
        credentials: "same-origin",
        body: new FormData(form),
      });
      if (!response.ok) throw new Error(response.statusText);
      data = await response.json();
    } catch (error) {
      if (mine === sequence) $("check-state").textContent = T.unreachable;
      return;
    }
    if (mine !== sequence) return;
    show(data);
  }

  function show(data) {
    form.querySelectorAll("[data-error-for]").forEach((node) => {
      node.textContent = "";
      node.hidden = true;
      const field = node.closest(".field");
      if (field) field.classList.remove("has-error");
    });
    const general = [];
    Object.entries(data.errors).forEach(([name, message]) => {
      const node = name ? form.querySelector(`[data-error-for="${CSS.escape(name)}"]`) : null;
      if (!node) {
        general.push(message);
        return;
      }
      node.textContent = message;
      node.hidden = false;
      const field = node.closest(".field");
      if (field) field.classList.add("has-error");
    });
    fill($("general-errors"), general);
    fill($("warnings"), data.warnings);
    Object.entries(data.previews).forEach(([name, html]) => {
      const node = form.querySelector(`[data-preview-for="${CSS.escape(name)}"]`);
      if (node) node.innerHTML = html; // sanitised on the server by the bank's renderer
    });
    $("rubric-check").innerHTML = data.rubric_html; // rendered by the server's template, escaped there
    $("calibration").innerHTML = data.calibration_html; // likewise
    $("check-state").textContent = data.ok ? T.parses : T.fails;
  }

  function fill(box, messages) {
    box.replaceChildren(
      ...messages.map((text) => {
        const p = document.createElement("p");
        p.textContent = text;
        return p;
      })
    );
    box.hidden = messages.length === 0;
  }

  // ---- rubric points and misconceptions: inputs are named as the parser names places -----------------
  const NAMED = ["name", "id", "for", "data-error-for", "aria-describedby", "data-preview-for"];

  function rename(root, pattern, replacement) {
    root.querySelectorAll("*").forEach((node) => {
      NAMED.forEach((attribute) => {
        const value = node.getAttribute(attribute);
        if (value) node.setAttribute(attribute, value.replace(pattern, replacement));
      });
    });
  }

  function renumber() {
    $("rubric-points").querySelectorAll(".rubric-point").forEach((point, i) => {
      rename(point, /rubric\[\d+\]/g, `rubric[${i}]`);
      point.querySelector(".point-number").textContent = String(i + 1);
      point.querySelectorAll(".misconception").forEach((wrong, j) => {
        rename(wrong, /misconceptions\[\d+\]/g, `misconceptions[${j}]`);
      });
    });
  }

  function fromTemplate(id) {
    return document.getElementById(id).content.firstElementChild.cloneNode(true);
  }

  function changed() {
    dirty = true;
    schedule();
  }

  $("add-point").addEventListener("click", () => {
    const point = fromTemplate("point-template");
    $("rubric-points").appendChild(point);
    renumber();
    point.querySelector("input").focus();
    changed();
  });

  form.addEventListener("click", (event) => {
    const target = event.target;
    if (!(target instanceof HTMLElement)) return;
    if (target.classList.contains("remove-point")) {
      target.closest(".rubric-point").remove();
    } else if (target.classList.contains("add-misconception")) {
      const wrong = fromTemplate("misconception-template");
      target.closest(".rubric-point").querySelector(".misconceptions").appendChild(wrong);
      renumber();
      wrong.querySelector("textarea").focus();
    } else if (target.classList.contains("remove-misconception")) {
      target.closest(".misconception").remove();
    } else {
      return;
    }
    renumber();
    changed();
  });

  // The blank point the page offers for adding one without JavaScript; here "Add a point" does that.
  form.querySelectorAll(".rubric-point[data-spare]").forEach((point) => point.remove());

  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  // Sample answers live beside the form (form="question-form"): checked as you type, saved with the version.
  $("samples").addEventListener("input", changed);
  $("add-sample").addEventListener("click", () => {
    const number = $("samples").querySelectorAll("textarea").length + 1;
    if (number >= T.max_samples) $("add-sample").hidden = true;
    if (number > T.max_samples) return;
    const field = document.createElement("div");
    field.className = "field";
    const label = document.createElement("label");
    label.htmlFor = `sample-${number}`;
    label.textContent = T.sample.replace("{number}", String(number));
    const area = document.createElement("textarea");
    area.name = "sample";
    area.id = `sample-${number}`;
    area.rows = 5;
    area.setAttribute("form", "question-form");
    field.append(label, area);
    $("samples").appendChild(field);
    area.focus();
  });

  form.addEventListener("submit", () => {
    dirty = false;
  });
  window.addEventListener("beforeunload", (event) => {
    if (!dirty) return;
    event.preventDefault();
    event.returnValue = T.unsaved;
  });
})();
