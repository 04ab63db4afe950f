// Source of static/vendor/codemirror/faultline-editor.js, bundled by `manage.py vendorstatic` with
// esbuild: CodeMirror 6 ships as ES modules over many packages, and our pages load plain scripts.
// The bundle sets window.FaultlineEditor, the one editor component the lab workspace and the lab
// authoring page share.
import { basicSetup } from "codemirror";
import { indentWithTab } from "@codemirror/commands";
import { indentUnit } from "@codemirror/language";
import { python } from "@codemirror/lang-python";
import { MergeView } from "@codemirror/merge";
import { openSearchPanel } from "@codemirror/search";
import { EditorSelection, EditorState, StateEffect, StateField } from "@codemirror/state";
import { Decoration, EditorView, keymap } from "@codemirror/view";

function languageFor(name) {
  return /\.py$/.test(name || "") ? [python()] : [];
}

// Lines a checker found fault with (the authoring page's parser errors), kept on their lines as the
// text around them is edited until the next check replaces them.
const setMarks = StateEffect.define();
const marksField = StateField.define({
  create: () => Decoration.none,
  update(marks, tr) {
    marks = marks.map(tr.changes);
    for (const effect of tr.effects) if (effect.is(setMarks)) marks = effect.value;
    return marks;
  },
  provide: (field) => EditorView.decorations.from(field),
});

function baseExtensions(name, label, extra, describedBy) {
  // Python files indent by four spaces; YAML and the rest by two, as their authors write them.
  const unit = /\.py$/.test(name || "") ? "    " : "  ";
  return [
    basicSetup,
    // Tab indents, as in any code editor; Escape then Tab still leaves the editor (CodeMirror's own
    // tab-focus mode), so keyboard users are not trapped.
    keymap.of([indentWithTab]),
    indentUnit.of(unit),
    EditorState.tabSize.of(4),
    languageFor(name),
    // An explicit tabindex: the text is reachable by Tab anyway (contenteditable), but checkers such as
    // axe-core only count tabindex and native controls when they ask whether a scrolling box is.
    EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
    describedBy ? EditorView.contentAttributes.of({ "aria-describedby": describedBy }) : [],
    extra || [],
  ];
}

// One editor for a set of files: each file keeps its own state (text, undo history, cursor), so
// switching tabs back and forth loses nothing, as the single textarea did not.
class FileEditor {
  constructor(parent, options) {
    this.label = options.label || "";
    this.describedBy = options.describedBy || "";
    this.onChange = options.onChange || (() => {});
    this.states = new Map();
    this.name = null;
    const listener = EditorView.updateListener.of((update) => {
      if (update.docChanged && this.name !== null) this.onChange(this.name, update.state.doc.toString());
    });
    this.listener = listener;
    this.view = new EditorView({ parent: parent, state: this.makeState("", "") });
    this.view.dom.classList.add("faultline-editor");
  }

  makeState(name, text) {
    return EditorState.create({ doc: text, extensions: baseExtensions(name, this.label, [this.listener, marksField], this.describedBy) });
  }

  // Shows `name` with `text`. A file already open keeps its history when its text is unchanged.
  open(name, text) {
    if (this.name !== null) this.states.set(this.name, this.view.state);
    let state = this.states.get(name);
    if (!state || state.doc.toString() !== text) state = this.makeState(name, text);
    this.states.set(name, state);
    this.name = name;
    this.view.setState(state);
  }

  // Drops every file's state (after a reset to the original program, the old history is stale).
  forget() {
    this.states.clear();
    this.name = null;
  }

  text() {
    return this.view.state.doc.toString();
  }

  // Replaces the open file's text as one undoable edit (used by "put back" actions and tests).
  setText(text) {
    this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: text } });
  }

  // Puts the cursor at the start of line `line` (1-based, clamped to the file), scrolls it to the
  // middle of the view and focuses the editor.
  goToLine(line) {
    const doc = this.view.state.doc;
    const target = doc.line(Math.min(Math.max(1, line), doc.lines));
    this.view.dispatch({
      selection: EditorSelection.cursor(target.from),
      effects: EditorView.scrollIntoView(target.from, { y: "center" }),
    });
    this.view.focus();
  }

  // Marks whole lines of the open file with the class `line-mark` and a tooltip:
  // `marks` is a list of {line (1-based), title}; lines past the end are left out.
  markLines(marks) {
    const doc = this.view.state.doc;
    const ranges = marks
      .filter((mark) => mark.line >= 1 && mark.line <= doc.lines)
      .map((mark) =>
        Decoration.line({ class: "line-mark", attributes: { title: mark.title || "" } }).range(doc.line(mark.line).from),
      );
    this.view.dispatch({ effects: setMarks.of(Decoration.set(ranges, true)) });
  }

  cursorLine() {
    const state = this.view.state;
    return state.doc.lineAt(state.selection.main.head).number;
  }

  openSearch() {
    openSearchPanel(this.view);
  }

  focus() {
    this.view.focus();
  }
}

// A read-only side-by-side view of one file: the original on the left, the candidate's on the right.
function diffView(parent, options) {
  // Read-only, yet still focusable, so the keyboard can move through and select in either side.
  const readOnly = EditorState.readOnly.of(true);
  const side = (text, label) => ({ doc: text, extensions: baseExtensions(options.name, label, readOnly) });
  const view = new MergeView({
    parent: parent,
    a: side(options.original, options.originalLabel),
    b: side(options.modified, options.modifiedLabel),
    collapseUnchanged: { margin: 3, minSize: 6 },
  });
  view.dom.classList.add("faultline-diff");
  return view;
}

window.FaultlineEditor = {
  create: (parent, options) => new FileEditor(parent, options || {}),
  diff: diffView,
  // The editor view that holds a DOM element, for tests and scripts that drive an editor directly.
  find: (element) => EditorView.findFromDOM(element),
};
