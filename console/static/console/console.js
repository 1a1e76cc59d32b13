// automedia's behaviour on every admin page, from a file: the Content-Security-Policy
// runs no inline script or event handler attribute.
"use strict";

// A preview's held image (admin/console/preview_image.html): its button loads that one image.
document.addEventListener("click", (event) => {
  const button = event.target.closest(".am-image-load");
  if (!button) return;
  const held = button.closest(".am-image-held");
  const image = document.createElement("img");
  image.alt = held.dataset.alt || "";
  image.src = held.dataset.src;
  held.replaceWith(image);
});

// A form that asks first (data-confirm): the browser's dialog, and no submit on cancel.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
