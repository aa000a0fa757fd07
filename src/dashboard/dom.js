/**
 * Building elements without innerHTML: market questions and API messages come from outside, so
 * every piece of text goes through textContent and can never become markup.
 */

/**
 * h('button', { class: 'primary', onclick: fn, 'data-testid': 'x' }, 'Label', child, [more])
 * Attributes starting with "on" become listeners; `false`/`null`/`undefined` attributes are skipped;
 * children may be strings, numbers, nodes, arrays or null.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    // Form controls take `value` as a property (a select's options may not exist yet as attributes).
    else if (name === 'value' && (el instanceof HTMLInputElement || el instanceof HTMLSelectElement)) el.value = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces everything inside `el` with `children`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled form control: the label wraps the control so role/label queries find it. */
export function field(label, control, hint) {
  return h('label', { class: 'field' }, h('span', { class: 'field-label' }, label), control, hint ? h('span', { class: 'hint' }, hint) : null);
}

/** Delays `fn` until calls stop for `ms`; used for typing in search boxes. */
export function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** Reads a CSS custom property so canvases and charts follow the light/dark palette. */
export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
