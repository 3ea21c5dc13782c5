import { reportableFieldNames } from '../forms.js';
import { cut } from '../text.js';

/** form_submit events: the form's name (or id) and the names of its fields, never values. */
export function captureForms({ record }) {
  document.addEventListener(
    'submit',
    ({ target: form }) =>
      record('form_submit', 0, {
        // The attributes: an input named "name" or "id" shadows form.name and form.id.
        formName: cut(form.getAttribute('name') || form.getAttribute('id'), 128),
        fields: reportableFieldNames([...form.elements]),
      }),
    true,
  );
}
