// Lab draft editor: a file tree, the workspace's code editor, save with the draft's revision
// (a stale save is refused and the text stays here), and a debounced server-side parse that puts
// the loadlabs parser's errors next to the file and line they name.
(function () {
  "use strict";
  const root = document.getElementById("lab-editor");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const draft = JSON.parse($("draft-data").textContent);
  const T = JSON.parse($("ui-strings").textContent);
  const t = (key, values) => T[key].replace(/\{(\w+)\}/g, (_, name) => String(values && name in values ? values[name] : ""));
  let files = Object.assign({}, draft.files);
  let revision = draft.revision;
  let current = "lab.yaml" in files ? "lab.yaml" : Object.keys(files).sort()[0];
  let problems = JSON.parse($("draft-problems").textContent);
  let dirty = false;
  let checkTimer = null;
  let checkSeq = 0;
  const input = $("code-input");

  const { csrf } = window.faultlineApi;

  async function call(method, url, body) {
    const response = await fetch(url, {
      method: method,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf(), Accept: "application/json" },
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, data: data };
  }

  function errorText(data) {
    const error = data.error || {};
    const fields = error.fields ? Object.values(error.fields).flat().join(" ") : "";
    return fields || error.message || "";
  }

  // ---- editor (the workspace's CodeMirror component; the textarea when its bundle is missing) --------
  // The textarea stays the copy that saving and checking read, kept equal to the editor on each change.
  const editor = window.FaultlineEditor
    ? window.FaultlineEditor.create($("code-editor"), {
        label: input.getAttribute("aria-label"),
        onChange: (name, text) => {
          input.value = text;
          files[current] = text;
          changed();
        },
      })
    : null;
  if (editor) input.hidden = true;

  function group(name) {
    if (!name.includes("/")) return "";
    const parts = name.split("/");
    return parts[0] === "bad_fixes" ? parts.slice(0, 2).join("/") + "/" : parts[0] + "/";
  }

  function renderTree() {
    const tree = $("file-tree");
    tree.replaceChildren();
    let last = null;
    Object.keys(files).sort((a, b) => (group(a) || " ").localeCompare(group(b) || " ") || a.localeCompare(b)).forEach((name) => {
      const heading = group(name);
      if (heading && heading !== last) {
        const li = document.createElement("li");
        li.className = "tree-group";
        li.textContent = heading;
        tree.appendChild(li);
      }
      last = heading;
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "tree-file";
      button.dataset.path = name;
      button.textContent = heading ? name.slice(heading.length) : name;
      button.setAttribute("aria-current", String(name === current));
      const count = problems.filter((p) => p.file === name).length;
      if (count) {
        const badge = document.createElement("span");
        badge.className = "problem-badge";
        badge.textContent = "!";
        badge.title = t("problems", { count: count });
        button.appendChild(badge);
      }
      button.addEventListener("click", () => open(name));
      li.appendChild(button);
      tree.appendChild(li);
    });
  }

  function open(name, line, initial) {
    if (!initial && current in files) files[current] = input.value;
    current = name;
    input.value = files[current] || "";
    if (editor) editor.open(current, input.value);
    $("current-file").textContent = current;
    renderTree();
    markLines();
    if (line) goToLine(line);
  }

  function lineHeight() {
    return parseFloat(getComputedStyle(input).lineHeight) || 19;
  }

  function goToLine(line) {
    if (editor) {
      editor.goToLine(line);
      return;
    }
    const lines = input.value.split("\n");
    let offset = 0;
    for (let i = 0; i < Math.min(line - 1, lines.length); i++) offset += lines[i].length + 1;
    input.focus();
    input.setSelectionRange(offset, offset + (lines[line - 1] || "").length);
    input.scrollTop = Math.max(0, (line - 5) * lineHeight());
    markLines();
  }

  // A red bar on every line the parser named in this file, kept in place while scrolling.
  function markLines() {
    if (editor) {
      editor.markLines(problems.filter((p) => p.file === current && p.line).map((p) => ({ line: p.line, title: p.where + ": " + p.problem })));
      return;
    }
    const marks = $("line-marks");
    marks.replaceChildren();
    const top = parseFloat(getComputedStyle(input).paddingTop) || 0;
    problems.filter((p) => p.file === current && p.line).forEach((p) => {
      const mark = document.createElement("div");
      mark.className = "line-mark";
      mark.title = p.where + ": " + p.problem;
      mark.style.top = top + (p.line - 1) * lineHeight() - input.scrollTop + "px";
      mark.style.height = lineHeight() + "px";
      marks.appendChild(mark);
    });
  }

  function renderProblems(state) {
    const list = $("problems");
    list.replaceChildren();
    $("check-state").textContent = state || (problems.length ? t("problems", { count: problems.length }) : t("ok"));
    $("check-state").className = "meta " + (problems.length ? "check-bad" : "check-ok");
    problems.forEach((p) => {
      const li = document.createElement("li");
      const link = document.createElement("button");
      link.type = "button";
      link.className = "problem";
      link.textContent = (p.file || "") + (p.line ? " · " + t("line", { line: p.line }) : "");
      link.addEventListener("click", () => (p.file in files ? open(p.file, p.line) : null));
      li.appendChild(link);
      li.appendChild(document.createTextNode(" " + p.where + ": " + p.problem));
      list.appendChild(li);
    });
    renderTree();
    markLines();
  }

  function scheduleCheck() {
    clearTimeout(checkTimer);
    checkTimer = setTimeout(runCheck, 600);
  }

  async function runCheck() {
    const seq = ++checkSeq;
    $("check-state").textContent = t("checking");
    files[current] = input.value;
    const result = await call("POST", draft.check, { files: files }).catch(() => null);
    if (!result || seq !== checkSeq) return;
    if (result.ok) {
      problems = result.data.problems;
      renderProblems();
    } else {
      renderProblems(errorText(result.data));
    }
  }

  function changed() {
    dirty = true;
    $("save-state").textContent = t("unsaved");
    scheduleCheck();
  }

  input.addEventListener("input", () => {
    files[current] = input.value;
    changed();
  });
  input.addEventListener("scroll", markLines);
  // Ctrl+S saves from the editor too (its keys bubble up from inside the box).
  $("code-editor").addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "s" && event.target !== input) {
      event.preventDefault();
      save();
    }
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Tab" && !event.shiftKey) {
      event.preventDefault();
      input.setRangeText(current.endsWith(".py") ? "    " : "  ", input.selectionStart, input.selectionEnd, "end");
      input.dispatchEvent(new Event("input"));
    }
    if ((event.ctrlKey || event.metaKey) && event.key === "s") {
      event.preventDefault();
      save();
    }
  });

  async function save() {
    files[current] = input.value;
    const box = $("save-error");
    const result = await call("PUT", draft.api, { files: files, revision: revision }).catch((error) => ({
      ok: false, data: { error: { message: String(error) } },
    }));
    if (!result.ok) {
      // The text stays in the editor: nothing here is replaced by the server's copy.
      box.textContent = errorText(result.data);
      box.hidden = false;
      return;
    }
    box.hidden = true;
    revision = result.data.revision;
    dirty = false;
    problems = result.data.problems || problems;
    $("save-state").textContent = t("saved", { revision: revision });
    renderProblems();
  }

  $("save-btn").addEventListener("click", save);
  $("add-btn").addEventListener("click", () => {
    const path = (window.prompt(t("new_path"), "program/") || "").trim();
    if (!path) return;
    if (path in files) return window.alert(t("exists", { path: path }));
    files[current] = input.value;
    files[path] = "";
    open(path);
    changed();
  });
  $("rename-btn").addEventListener("click", () => {
    const path = (window.prompt(t("rename_to", { path: current }), current) || "").trim();
    if (!path || path === current) return;
    if (path in files) return window.alert(t("exists", { path: path }));
    files[path] = input.value;
    delete files[current];
    current = path;
    open(path, null, true);
    changed();
  });
  $("delete-btn").addEventListener("click", () => {
    if (!window.confirm(t("confirm_delete", { path: current }))) return;
    delete files[current];
    open("lab.yaml" in files ? "lab.yaml" : Object.keys(files).sort()[0] || "lab.yaml", null, true);
    changed();
  });
  window.addEventListener("beforeunload", (event) => {
    if (dirty) {
      event.preventDefault();
      event.returnValue = t("confirm_leave");
    }
  });
  // Preview and validation use the saved draft: save first when there are edits.
  document.querySelectorAll("#validate-form, form[action$='/preview/']").forEach((form) => {
    form.addEventListener("submit", async (event) => {
      if (!dirty) return;
      event.preventDefault();
      await save();
      if (!dirty) form.submit();
    });
  });

  open(current, null, true);
  renderProblems();
})();
