import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SHADES } from '../src/shape.js';

// The retention shades of src/style.css: a cell's figure is written in its shade's text colour,
// which must read on that shade, as a pressed switch's text on the accent colour (WCAG 2's
// contrast of at least 4.5:1 for normal text), in each theme: the light one, the dark one a host
// asks for, and the dark one of a browser left alone.
const css = readFileSync(new URL('../src/style.css', import.meta.url), 'utf8');
const blocks = {
  light: /:root \{([^}]*)\}/.exec(css)[1],
  dark: /:root\[data-theme='dark'\] \{([^}]*)\}/.exec(css)[1],
  'dark by preference': /:root:not\(\[data-theme\]\) \{([^}]*)\}/.exec(css)[1],
};

function colour(block, name) {
  const found = new RegExp(`${name}:\\s*(#[0-9a-f]{6})\\b`, 'i').exec(block);
  assert.ok(found, `${name} is set`);
  return found[1];
}

function luminance(hex) {
  const [r, g, b] = hex.slice(1).match(/../g).map((h) => parseInt(h, 16) / 255)
    .map((c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a, b) {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

test('the contrast computed as WCAG defines it', () => {
  assert.equal(contrast('#ffffff', '#000000').toFixed(1), '21.0');
  assert.equal(contrast('#777777', '#ffffff').toFixed(2), '4.48');
});

for (const [theme, block] of Object.entries(blocks)) {
  test(`every retention shade's figure reads on it: ${theme} theme`, () => {
    for (let k = 0; k <= SHADES; k += 1) {
      const ratio = contrast(colour(block, `--s${k}`), colour(block, `--s${k}-text`));
      assert.ok(ratio >= 4.5, `shade ${k}: ${ratio.toFixed(2)}:1`);
    }
    const pressed = contrast(colour(block, '--accent'), colour(block, '--on-accent'));
    assert.ok(pressed >= 4.5, `a pressed button's text: ${pressed.toFixed(2)}:1`);
  });
}

test('the shades of each theme are distinct, and the light and dark ones differ', () => {
  for (const block of Object.values(blocks)) {
    const shades = Array.from({ length: SHADES + 1 }, (_, k) => colour(block, `--s${k}`));
    assert.equal(new Set(shades).size, SHADES + 1);
  }
  assert.notEqual(colour(blocks.light, '--s5'), colour(blocks.dark, '--s5'));
  assert.equal(colour(blocks.dark, '--s5'), colour(blocks['dark by preference'], '--s5'));
});
