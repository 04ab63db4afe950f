// Item rows of the template and new-interview forms: add, remove, move up and down.
// Without this script the form still works: the page renders two spare rows, blank rows are ignored.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", () => {
    const box = document.getElementById("item-rows");
    if (!box) return;
    const list = box.querySelector(".items-list");
    const add = document.getElementById("add-item");
    const max = Number(box.dataset.max) || 20;
    const rows = () => Array.from(list.querySelectorAll(".item-row"));

    function renumber() {
      rows().forEach((row, n) => {
        const select = row.querySelector("select");
        const label = row.querySelector("label[for]");
        select.id = "item-ref-" + (n + 1);
        if (label) label.htmlFor = select.id;
      });
      add.disabled = rows().length >= max;
    }

    function clear(row) {
      row.querySelector("select").value = "";
      row.querySelector("input[name=item_box]").value = "";
    }

    // Keep one spare row at most: the button adds more when needed.
    const blanks = rows().filter((row) => !row.querySelector("select").value);
    blanks.slice(rows().length === blanks.length ? 1 : 0).forEach((row) => row.remove());
    if (!rows().length) list.append(blanks[0]);

    list.addEventListener("click", (event) => {
      const button = event.target.closest("button");
      if (!button) return;
      const row = button.closest(".item-row");
      if (button.hasAttribute("data-remove")) {
        if (rows().length > 1) row.remove();
        else clear(row);
      } else if (button.dataset.move === "-1" && row.previousElementSibling) {
        list.insertBefore(row, row.previousElementSibling);
      } else if (button.dataset.move === "1" && row.nextElementSibling) {
        list.insertBefore(row.nextElementSibling, row);
      }
      renumber();
      button.focus();
    });

    add.hidden = false;
    add.addEventListener("click", () => {
      if (rows().length >= max) return;
      const row = rows()[rows().length - 1].cloneNode(true);
      clear(row);
      list.append(row);
      renumber();
      row.querySelector("select").focus();
    });
    renumber();
  });
})();
