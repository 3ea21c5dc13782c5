import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  changeOf, cohortLabel, dimensionLabel, duration, intervalWords, metricLabel, numberFormat, pathValueLabel, returnLabel,
} from '../src/format.js';

test('figures read in the units of the tools', () => {
  const { figure } = numberFormat('en-US');
  assert.equal(figure('visitors', 12345), '12,345');
  assert.equal(figure('bounce_rate', 40), '40.0%');
  assert.equal(figure('percentage', 12.34), '12.3%');
  assert.equal(figure('views_per_visit', 1.5), '1.50');
  assert.equal(figure('visit_duration', 3725), '1h 02m');
  assert.equal(figure('visits', null), '–');
  assert.equal(numberFormat('de-DE').figure('visitors', 12345), '12.345');
});

test('a change reads as the tools compute it: percent, or points for a rate', () => {
  const { change } = numberFormat('en-US');
  assert.equal(change('visitors', changeOf('visitors', 37, 29)), '+27.6%');
  assert.equal(change('visitors', changeOf('visitors', 20, 40)), '−50.0%');
  assert.equal(change('bounce_rate', changeOf('bounce_rate', 40.5, 42)), '−1.5 pts');
  assert.equal(change('visits', changeOf('visits', 5, 0), 0), 'no change to compute from 0');
  assert.equal(change('bounce_rate', changeOf('bounce_rate', 40, null), null), 'no change to compute');
  assert.equal(change('visits', 0), '±0.0%');
});

// The headline reads "Visitors 9" then these three pieces (the middle one coloured).
test('a comparison reads as a sentence, a base of 0 included', () => {
  const { against, figure } = numberFormat('en-US');
  const period = { from: '2026-11-18', to: '2026-11-24' };
  const sentence = (metric, now, before) => `${metricLabel(metric)} ${figure(metric, now)}${against(metric, before, changeOf(metric, now, before), period).join('')}`;
  assert.equal(sentence('visitors', 9, 0), 'Visitors 9, against 0 in 2026-11-18 to 2026-11-24 (no change to compute from 0)');
  assert.equal(sentence('visitors', 37, 29), 'Visitors 37, against 29 in 2026-11-18 to 2026-11-24 (+27.6%)');
  assert.equal(sentence('bounce_rate', 40.5, 42), 'Bounce rate 40.5%, against 42.0% in 2026-11-18 to 2026-11-24 (−1.5 pts)');
  assert.equal(sentence('bounce_rate', 40.5, null), 'Bounce rate 40.5%, nothing to compare with in 2026-11-18 to 2026-11-24');
  assert.deepEqual(against('visitors', 29, 27.6, period), [', against 29 in 2026-11-18 to 2026-11-24 (', '+27.6%', ')']);
});

test('a funnel step says what dropped off, none when nothing did', () => {
  const { dropoff } = numberFormat('en-US');
  assert.equal(dropoff(0, 100, 1), 'none dropped off · 100.0% of step 1 continued');
  assert.equal(dropoff(1234, 48.9, 2), '1,234 dropped off · 48.9% of step 2 continued');
  assert.doesNotMatch(dropoff(0, 100, 1), /−/);
});

test('retention and paths words', () => {
  assert.deepEqual(intervalWords('month'), { name: 'Month', adjective: 'monthly', now: 'this month' });
  assert.equal(intervalWords('fortnight').name, 'Week', 'an unknown interval reads as the default');
  assert.equal(cohortLabel('en-US', 'week', false)('2026-11-02'), 'Nov 2');
  assert.equal(cohortLabel('en-US', 'day', true)('2026-12-31'), 'Dec 31, 26');
  assert.equal(cohortLabel('en-US', 'month', false)('2026-01'), 'Jan 2026');
  assert.deepEqual([null, 'any_visit', { page: '/pricing' }, { goal: 'Signup' }, { event: 'Download' }].map(returnLabel),
    ['any visit', 'any visit', '/pricing', 'goal Signup', 'event Download']);
  assert.deepEqual(['/pricing', 'goal:Signup', '(other)', '(exit)', null].map(pathValueLabel),
    ['/pricing', 'Goal Signup', '(other)', '(exit)', '(none)']);
});

test('durations and names', () => {
  assert.deepEqual([duration(42), duration(65), duration(3600)], ['42s', '1m 05s', '1h 00m']);
  assert.equal(metricLabel('views_per_visit'), 'Views per visit');
  assert.deepEqual(['time:day', 'visit:utm_source', 'event:page', 'event:props:plan'].map(dimensionLabel),
    ['Day', 'Utm source', 'Page', 'Property plan']);
});
