// The operators rows (console.widgets.OperatorsWidget): add a row from the template, remove one.
"use strict";
document.addEventListener("click", (event) => {
  const box = event.target.closest(".am-operators");
  if (!box) return;
  if (event.target.closest(".am-operator-add")) {
    const row = box.querySelector(".am-operator-template").content.firstElementChild.cloneNode(true);
    row.querySelectorAll("[id]").forEach((field) => field.removeAttribute("id"));
    box.querySelector(".am-operator-rows tbody").append(row);
    row.querySelector("input").focus();
  } else if (event.target.closest(".am-operator-remove")) {
    event.target.closest(".am-operator-row").remove();
  }
});
