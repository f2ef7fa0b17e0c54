// timezone.js — the "Store time zone" card on the console's Boxes page
// (manager): the zone receipts, tickets, reports and the day close use,
// the store's time now in it, and a picker that sets it on every box
// (PUT /api/staff/time-zone, replicated). Every screen then shows times
// in it (dom.js setStoreZone).

import { $, setError, toast, setStoreZone } from '/assets/dom.js';
import { fillZones, phoneZone } from '/assets/zones.js';

export function createTimeZoneCard({ api, T }) {
  let view = null;
  let filled = false;
  let timer = null;

  async function load() {
    try {
      view = await api.get('/api/staff/time-zone');
    } catch (e) {
      if (e.status !== 401) setError('#zone-error', e.message);
      return;
    }
    setStoreZone(view.timeZone || '');
    filled = false;
    render();
  }

  function render() {
    if (!view) return;
    const sel = $('#zone-select');
    if (!filled) {
      // Unset: the tablet's own zone is the likely answer.
      fillZones(sel, view.timeZone || phoneZone());
      filled = true;
    }
    const zone = view.timeZone;
    const lang = T.lang() === 'en' ? 'en-GB' : 'ja-JP';
    if (zone) {
      const time = new Date().toLocaleString(lang, { timeZone: zone, month: 'numeric', day: 'numeric', weekday: 'short', hour: '2-digit', minute: '2-digit' });
      T.put($('#zone-now'), 'staff.zone.now', { zone: zone.replace(/_/g, ' '), time });
    } else {
      T.put($('#zone-now'), 'staff.zone.unset');
    }
    T.put($('#zone-source'), 'staff.zone.source.' + view.source);
    $('#zone-card').dataset.source = view.source;
  }

  async function save(ev) {
    ev.preventDefault();
    setError('#zone-error', '');
    const zone = $('#zone-select').value;
    const b = $('#zone-save');
    b.disabled = true;
    try {
      view = await api.put('/api/staff/time-zone', { timeZone: zone });
      setStoreZone(view.timeZone || '');
      render();
      const card = $('#zone-card');
      card.dataset.saves = String(Number(card.dataset.saves || 0) + 1); // for tests: a save answered
      toast(T.t('staff.zone.saved', { zone: zone.replace(/_/g, ' ') }), 'ok');
    } catch (e) {
      if (e.status !== 401) setError('#zone-error', e.message);
    } finally {
      b.disabled = false;
    }
  }

  return {
    bind: () => $('#zone-form').addEventListener('submit', save),
    enter: () => {
      load();
      clearInterval(timer);
      timer = setInterval(() => document.visibilityState === 'visible' && render(), 30000); // the clock line
    },
    leave: () => {
      clearInterval(timer);
      timer = null;
    },
    rerender: render,
  };
}
