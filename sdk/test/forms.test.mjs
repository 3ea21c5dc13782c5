import assert from 'node:assert/strict';
import { test } from 'node:test';

import { reportableFieldNames } from '../src/forms.js';

test('field names only, each once, in form order', () => {
  const fields = [
    { name: 'plan', type: 'select-one' },
    { name: 'message', type: 'textarea' },
    { name: 'size', type: 'radio' },
    { name: 'size', type: 'radio' },
    { name: 'company', type: 'text', autocomplete: 'organization' },
  ];
  assert.deepEqual(reportableFieldNames(fields), ['plan', 'message', 'size', 'company']);
});

test('password, e-mail, phone, hidden and buttons are left out by type', () => {
  const fields = ['password', 'email', 'tel', 'hidden', 'submit', 'button', 'reset', 'image'].map((type) => ({ name: `f_${type}_x`.replace(/[a-z]+_x$/, 'x'), type }));
  assert.deepEqual(reportableFieldNames(fields), []);
});

test('card-like and other personal fields are left out by autocomplete', () => {
  const fields = ['cc-number', 'cc-exp', 'cc-csc', 'shipping email', 'tel-national', 'new-password', 'one-time-code'].map((autocomplete, n) => ({
    name: `field${n}`,
    type: 'text',
    autocomplete,
  }));
  assert.deepEqual(reportableFieldNames(fields), []);
});

test('fields whose name says they are personal are left out, whatever their type', () => {
  const names = ['user_password', 'Email', 'phoneNumber', 'card_no', 'cvv', 'iban', 'ssn', 'csrf_token', 'api_secret'];
  assert.deepEqual(reportableFieldNames(names.map((name) => ({ name, type: 'text' }))), []);
});

test('fields without a name are left out', () => {
  assert.deepEqual(reportableFieldNames([{ name: '', type: 'text' }, { type: 'text' }, { name: 'q', type: 'search' }]), ['q']);
});
