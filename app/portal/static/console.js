// The console's map and its answers: a table cell or a step row names its points (data-points,
// e.g. "s0 d2"); hovering or focusing it highlights the map's badges of those points, clicking
// it keeps them highlighted. Clicking the map elsewhere adds its point to a list of the form.
(function () {
  "use strict";
  const overlay = document.getElementById("map-overlay");
  const named = (ids) => {
    const badges = overlay ? [...overlay.querySelectorAll("g.badge")] : [];
    const wanted = new Set(ids.split(/\s+/).filter(Boolean));
    return badges.filter((b) => b.dataset.ids.split(/\s+/).some((id) => wanted.has(id)));
  };
  const mark = (el, cls, on) => {
    el.classList.toggle(cls, on);
    named(el.dataset.points || "").forEach((b) => b.classList.toggle(cls, on));
  };
  let selected = null;
  document.querySelectorAll("[data-points]").forEach((el) => {
    if (!el.dataset.points) return;
    el.addEventListener("mouseenter", () => mark(el, "hl", true));
    el.addEventListener("mouseleave", () => mark(el, "hl", false));
    el.addEventListener("focus", () => mark(el, "hl", true));
    el.addEventListener("blur", () => mark(el, "hl", false));
    el.addEventListener("click", () => {
      if (selected) mark(selected, "sel", false);
      selected = selected === el ? null : el;
      if (selected) mark(selected, "sel", true);
    });
  });
  // a badge hovered: the rows, columns and cells that name it
  if (overlay) {
    overlay.querySelectorAll("g.badge").forEach((badge) => {
      const ids = badge.dataset.ids.split(/\s+/);
      const mates = [...document.querySelectorAll("th[data-points], tr[data-points]")].filter((el) =>
        el.dataset.points.split(/\s+/).some((id) => ids.includes(id)));
      badge.addEventListener("mouseenter", () => mates.forEach((el) => el.classList.add("hl")));
      badge.addEventListener("mouseleave", () => mates.forEach((el) => el.classList.remove("hl")));
    });
  }

  // The map's click -> its point, by the inverse Web Mercator of the image's window.
  const targets = [...document.querySelectorAll("textarea[data-map-target]")];
  if (!overlay || !targets.length) return;
  let target = targets[0];
  targets.forEach((t) => t.addEventListener("focus", () => { target = t; }));
  const R = 6378137;
  overlay.addEventListener("click", (event) => {
    if (event.target.closest("g.badge")) return;
    const box = overlay.getBoundingClientRect();
    const view = overlay.viewBox.baseVal;
    const px = (event.clientX - box.left) * (view.width / box.width);
    const py = (event.clientY - box.top) * (view.height / box.height);
    const mpp = Number(overlay.dataset.mpp);
    const x = Number(overlay.dataset.minx) + px * mpp;
    const y = Number(overlay.dataset.maxy) - py * mpp;
    const lng = (x / R) * 180 / Math.PI;
    const lat = (2 * Math.atan(Math.exp(y / R)) - Math.PI / 2) * 180 / Math.PI;
    const line = `${lat.toFixed(5)},${lng.toFixed(5)}`;
    target.value = target.value.replace(/\s*$/, "") + (target.value.trim() ? "\n" : "") + line;
    const hint = document.getElementById("map-hint");
    if (hint) hint.textContent = `Added ${line} to ${target.dataset.mapTarget}; Send to see the new answer.`;
  });
})();
