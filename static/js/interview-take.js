// The candidate's interview pages: countdowns, the interviewers' messages, autosave, Markdown preview.
// The server's clock is the authority: countdowns run from the seconds it sends and re-sync on every
// poll and save; when one reaches zero the page asks the server, which closes what is over, and
// reloads to show it. Everything here also works as plain forms without this script.
(function () {
  "use strict";
  const { ApiError, call } = window.faultlineApi;
  const root = document.getElementById("take");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const T = JSON.parse($("take-ui").textContent);
  const t = (key, values) => T[key].replace(/\{(\w+)\}/g, (_, name) => String(values && name in values ? values[name] : ""));
  const POLL_MS = 3000;
  const SAVE_MS = 3000;
  const itemId = root.dataset.item ? Number(root.dataset.item) : null;
  let state = JSON.parse($("take-state").textContent);
  const shownStates = itemStates(state);
  let reloading = false;




  function reload() {
    if (reloading) return;
    reloading = true;
    window.location.reload();
  }

  // ---- countdowns ---------------------------------------------------------------------------
  // key -> {el, deadline (ms, this page's clock), zeroSeen}
  const clocks = new Map();
  document.querySelectorAll("[data-countdown]").forEach((el) => {
    const seconds = Number(el.dataset.seconds);
    if (el.dataset.seconds === "" || Number.isNaN(seconds)) return;
    clocks.set(el.dataset.countdown, { el: el, deadline: Date.now() + seconds * 1000, zeroSeen: false });
  });

  function format(seconds) {
    const h = Math.floor(seconds / 3600);
    const m = Math.floor((seconds % 3600) / 60);
    const s = seconds % 60;
    const mm = String(m).padStart(2, "0");
    const ss = String(s).padStart(2, "0");
    return h > 0 ? h + ":" + mm + ":" + ss : mm + ":" + ss;
  }

  function setClock(key, seconds) {
    const clock = clocks.get(key);
    if (!clock || seconds === null || seconds === undefined) return;
    clock.deadline = Date.now() + seconds * 1000;
    if (seconds > 0) clock.zeroSeen = false;
  }

  function tick() {
    clocks.forEach((clock) => {
      const left = Math.max(0, Math.ceil((clock.deadline - Date.now()) / 1000));
      clock.el.textContent = format(left);
      clock.el.closest(".take-clock, .take-item-clock")?.classList.toggle("low", left <= 300);
      if (left === 0 && !clock.zeroSeen) {
        clock.zeroSeen = true;
        // Ask the server, which closes what is over; the answer reloads the page if anything changed.
        setTimeout(() => poll().then(() => reload()), 1000);
      }
    });
  }

  // ---- state from the server ------------------------------------------------------------------
  function itemStates(s) {
    return s.items.map((item) => item.id + ":" + item.state).join(",");
  }

  function renderMessages(messages) {
    const list = $("take-messages");
    if (!list) return;
    const rendered = list.dataset.count ? Number(list.dataset.count) : null;
    if (rendered === messages.length) return;
    list.dataset.count = String(messages.length);
    list.replaceChildren();
    if (!messages.length) {
      const empty = document.createElement("li");
      empty.className = "empty";
      empty.textContent = T.no_messages;
      list.appendChild(empty);
      return;
    }
    messages.forEach((message) => {
      const li = document.createElement("li");
      li.className = "take-message " + message.kind;
      const label = document.createElement("span");
      label.className = "take-message-label";
      label.textContent = message.label + (message.item ? " · " + t("item", { n: message.item }) : "");
      const text = document.createElement("span");
      text.className = "take-message-text";
      text.textContent = message.text;
      li.append(label, " ", text);
      list.appendChild(li);
    });
  }

  function apply(next) {
    state = next;
    if (next.status !== root.dataset.status || itemStates(next) !== shownStates) {
      // Started, finished or an item closed: the server renders the page for what is now true.
      reload();
      return;
    }
    setClock("interview", next.seconds_left);
    next.items.forEach((item) => setClock("item-" + item.id, item.ends_in));
    renderMessages(next.messages);
  }

  async function poll() {
    try {
      apply(await call("GET", root.dataset.api));
    } catch (error) {
      // A missed poll changes nothing: the next one catches up, and the countdowns keep running.
    }
  }

  if ($("take-messages")) $("take-messages").dataset.count = String(state.messages.length);
  tick();
  setInterval(tick, 1000);
  if (state.status === "in_progress") {
    setInterval(() => {
      if (!document.hidden) poll();
    }, POLL_MS);
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) poll();
    });
  }

  // ---- confirmations ---------------------------------------------------------------------------
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (event.submitter && event.submitter.id === "save-now") return;
      if (!window.confirm(T[form.dataset.confirm])) {
        event.preventDefault();
        return;
      }
      // The form carries the text itself; nothing is left for the page-close save to send.
      dirty = false;
    });
  });

  // ---- the answer: autosave and preview ------------------------------------------------------------
  const answer = $("answer");
  const saveState = $("save-state");
  const editable = answer && !answer.readOnly;
  let dirty = false;
  let saving = null;

  function clockTime(iso) {
    const when = iso ? new Date(iso) : new Date();
    return [when.getHours(), when.getMinutes(), when.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
  }

  function showSaved(iso) {
    if (saveState) saveState.textContent = t("saved_at", { time: clockTime(iso) });
  }

  async function save() {
    if (!editable || !dirty) return;
    if (saving) return saving;
    const text = answer.value;
    if (saveState) saveState.textContent = T.saving;
    saving = call("PUT", answer.dataset.draftApi, { text: text })
      .then((item) => {
        if (answer.value === text) dirty = false;
        showSaved(item.draft_saved_at);
        if (item.ends_in !== null && item.ends_in !== undefined) setClock("item-" + item.id, item.ends_in);
      })
      .catch((error) => {
        if (!saveState) return;
        if (error instanceof ApiError) {
          saveState.textContent = t("save_failed", { error: error.message });
          if (error.status === 400) {
            // Time is up (or the item was handed in elsewhere): the server's page shows what was kept.
            dirty = false;
            setTimeout(reload, 2500);
          }
        } else {
          saveState.textContent = T.offline;
        }
      })
      .finally(() => {
        saving = null;
      });
    return saving;
  }

  if (editable) {
    if (saveState && saveState.dataset.savedAt) showSaved(saveState.dataset.savedAt);
    answer.addEventListener("input", () => {
      dirty = true;
      if (saveState) saveState.textContent = T.unsaved;
    });
    answer.addEventListener("blur", save);
    setInterval(save, SAVE_MS);
    // Closing the page mid-sentence: the browser still delivers this request after the page is gone.
    window.addEventListener("pagehide", () => {
      if (!dirty) return;
      call("PUT", answer.dataset.draftApi, { text: answer.value }, { keepalive: true }).catch(() => {});
    });
  }

  const tabs = document.querySelector(".take-tabs");
  if (answer && tabs) {
    tabs.hidden = false;
    const writeTab = $("tab-write");
    const previewTab = $("tab-preview");
    const answerPane = $("answer-pane");
    const previewPane = $("preview-pane");

    function select(preview) {
      writeTab.setAttribute("aria-selected", String(!preview));
      previewTab.setAttribute("aria-selected", String(preview));
      answerPane.hidden = preview;
      previewPane.hidden = !preview;
    }

    writeTab.addEventListener("click", () => {
      select(false);
      answer.focus();
    });
    previewTab.addEventListener("click", async () => {
      select(true);
      save();
      if (!answer.value.trim()) {
        previewPane.innerHTML = "";
        const empty = document.createElement("p");
        empty.className = "empty";
        empty.textContent = T.preview_empty;
        previewPane.appendChild(empty);
        return;
      }
      try {
        const data = await call("POST", root.dataset.previewApi, { text: answer.value });
        // Rendered and sanitised (nh3) by the server, as the interviewers will see it.
        previewPane.innerHTML = data.html;
      } catch (error) {
        previewPane.textContent = t("preview_failed", { error: error.message });
      }
    });
    tabs.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      const toPreview = writeTab.getAttribute("aria-selected") === "true";
      (toPreview ? previewTab : writeTab).click();
      (toPreview ? previewTab : writeTab).focus();
    });
  }
})();
