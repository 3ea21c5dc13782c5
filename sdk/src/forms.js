// Matched against a field's type, autocomplete and name together: fields that may hold secrets,
// contact or payment details (a harmless field named "hotel" is lost too), fields that hold
// state rather than input (hidden: CSRF tokens), and the form's buttons.
const LEFT_OUT = /pass|mail|tel|phone|card|cc-|cvc|cvv|iban|ssn|secret|token|one-time|hidden|submit|button|reset|image/i;

/**
 * The names of a form's fields that may be reported, each once; values are never read.
 * @param {Array<{name?: string, type?: string, autocomplete?: string}>} fields form controls
 *   (their name, type and autocomplete properties are read)
 * @returns {string[]}
 */
export const reportableFieldNames = (fields) => [
  ...new Set(fields.filter(({ name, type, autocomplete }) => name && !LEFT_OUT.test([type, autocomplete, name])).map(({ name }) => name)),
];
