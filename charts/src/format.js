// How each metric reads: the same units the tools answer in (docs/AGENTS.md): counts as whole
// numbers, rates and shares in percent with 1 decimal, views per visit with 2, durations in
// seconds, shown as minutes and seconds.

export const RATES = new Set(['bounce_rate', 'conversion_rate']); // compared in points
const PERCENTS = new Set(['bounce_rate', 'conversion_rate', 'percentage']);
// Figures of a row that add up over rows (the rest of a breakdown is their sum).
export const ADDITIVE = new Set(['visitors', 'visits', 'pageviews', 'events', 'percentage']);

const LABELS = {
  visitors: 'Visitors', visits: 'Visits', pageviews: 'Pageviews', events: 'Events',
  bounce_rate: 'Bounce rate', views_per_visit: 'Views per visit',
  visit_duration: 'Visit duration', conversion_rate: 'Conversion rate', percentage: 'Share',
};

export function metricLabel(name) {
  return LABELS[name] ?? name;
}

export function dimensionLabel(name) {
  const time = /^time:(\w+)$/.exec(name);
  if (time) return time[1][0].toUpperCase() + time[1].slice(1);
  const prop = /^event:props:(.+)$/.exec(name);
  if (prop) return `Property ${prop[1]}`;
  const [, field = name] = /^\w+:(.+)$/.exec(name) ?? [];
  const words = field.replace(/_/g, ' ');
  return words[0].toUpperCase() + words.slice(1);
}

export function valueLabel(value) {
  return value === null || value === undefined || value === '' ? '(none)' : String(value);
}

export function numberFormat(locale) {
  const whole = new Intl.NumberFormat(locale, { maximumFractionDigits: 0 });
  const one = new Intl.NumberFormat(locale, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  const two = new Intl.NumberFormat(locale, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const figure = (metric, value) => {
    if (value === null || value === undefined) return '–';
    if (PERCENTS.has(metric)) return `${one.format(value)}%`;
    if (metric === 'views_per_visit') return two.format(value);
    if (metric === 'visit_duration') return duration(value);
    return whole.format(value);
  };
  // A change as the tools give it; null when there is none: from a base of 0 (a count's
  // relative change), or without a figure to compare with.
  const change = (metric, value, before) => {
    if (value === null || value === undefined) {
      return before === 0 ? 'no change to compute from 0' : 'no change to compute';
    }
    const sign = value > 0 ? '+' : value < 0 ? '−' : '±';
    const size = one.format(Math.abs(value));
    return RATES.has(metric) ? `${sign}${size} pts` : `${sign}${size}%`;
  };
  const axis = (metric, value) => {
    if (PERCENTS.has(metric)) return `${whole.format(value)}%`;
    if (metric === 'visit_duration') return duration(value);
    if (Math.abs(value) >= 10000) {
      return new Intl.NumberFormat(locale, { notation: 'compact', maximumFractionDigits: 1 }).format(value);
    }
    return metric === 'views_per_visit' ? one.format(value) : whole.format(value);
  };
  // The comparison after a figure, in three pieces (the middle one is the change, which the page
  // colours): ", against 29 in 2026-11-04 to 2026-11-17 (" "+27.6%" ")".
  const against = (metric, before, value, period) => {
    const when = `${period.from} to ${period.to}`;
    if (before === null || before === undefined) return [`, nothing to compare with in ${when}`, '', ''];
    return [`, against ${figure(metric, before)} in ${when} (`, change(metric, value, before), ')'];
  };
  // What left a funnel between two steps, and the share of the step before that went on.
  const dropoff = (count, share, step) => {
    const left = count ? `${whole.format(count)} dropped off` : 'none dropped off';
    return `${left} · ${figure('percentage', share)} of step ${step} continued`;
  };
  return { figure, change, against, axis, dropoff };
}

export function duration(seconds) {
  const total = Math.round(seconds);
  if (total < 60) return `${total}s`;
  const minutes = Math.floor(total / 60);
  if (minutes < 60) return `${minutes}m ${String(total % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

// The relative change (or the difference in points for a rate), as the tools compute it.
export function changeOf(metric, now, before) {
  if (now === null || now === undefined || before === null || before === undefined) return null;
  if (RATES.has(metric)) return Math.round((now - before) * 10) / 10;
  return before ? Math.round(((now - before) / before) * 1000) / 10 : null;
}

// --- retention and paths ------------------------------------------------------------------------

const INTERVALS = {
  day: { name: 'Day', adjective: 'daily', now: 'today' },
  week: { name: 'Week', adjective: 'weekly', now: 'this week' },
  month: { name: 'Month', adjective: 'monthly', now: 'this month' },
};

// A retention interval in words: its name (a column header: "Week 3"), its adjective ("weekly
// cohorts") and the interval holding now ("this week so far").
export function intervalWords(interval) {
  return INTERVALS[interval] ?? INTERVALS.week;
}

// A cohort as a short date in the locale ("Nov 23"; "Nov 2026" for a month; with the year when
// the cohorts span more than one), from the tool's YYYY-MM-DD or YYYY-MM.
export function cohortLabel(locale, interval, withYear) {
  const month = interval === 'month';
  const dates = new Intl.DateTimeFormat(locale, {
    timeZone: 'UTC', month: 'short', ...(month ? { year: 'numeric' } : { day: 'numeric' }),
    ...(withYear && !month ? { year: '2-digit' } : {}),
  });
  return (cohort) => dates.format(new Date(`${month ? `${cohort}-01` : cohort}T00:00:00Z`));
}

// What counts as coming back (the result's `return_on`: a page, goal or custom event, else any
// visit), as read after "back on".
export function returnLabel(returnOn) {
  if (returnOn && typeof returnOn === 'object') {
    if (returnOn.page) return returnOn.page;
    if (returnOn.goal) return `goal ${returnOn.goal}`;
    if (returnOn.event) return `event ${returnOn.event}`;
  }
  return 'any visit';
}

// A path's value as shown: a page as its path, `goal:Signup` as "Goal Signup" (as the funnel
// labels a goal step), `(other)`, `(exit)` and `(entry)` as they are.
export function pathValueLabel(value) {
  const text = valueLabel(value);
  return text.startsWith('goal:') ? `Goal ${text.slice(5)}` : text;
}
