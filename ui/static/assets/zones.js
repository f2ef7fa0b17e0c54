// zones.js — the time zone picker of the setup wizard and the console's
// "Store time zone": every IANA zone this browser knows, each with its
// UTC offset today, one zone chosen (the phone's in the wizard, the
// store's on the console). The boxes check the name again by their own
// rule (400 INVALID_TIME_ZONE).

// Used when the browser cannot list its zones (Safari before 15.4).
const FALLBACK = ['Asia/Tokyo', 'Asia/Seoul', 'Asia/Shanghai', 'Asia/Taipei', 'Asia/Hong_Kong', 'Asia/Manila', 'Asia/Bangkok',
  'Asia/Ho_Chi_Minh', 'Asia/Singapore', 'Asia/Jakarta', 'Asia/Kolkata', 'Australia/Sydney', 'Pacific/Auckland', 'Pacific/Honolulu',
  'America/Los_Angeles', 'America/Denver', 'America/Chicago', 'America/New_York', 'America/Sao_Paulo', 'Europe/London',
  'Europe/Paris', 'Europe/Berlin', 'UTC'];

// phoneZone is this device's own zone ('' when the browser does not say).
export function phoneZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || '';
  } catch (_) {
    return '';
  }
}

export function zoneNames() {
  let names = [];
  try {
    names = Intl.supportedValuesOf('timeZone').slice();
  } catch (_) {
    names = FALLBACK.slice();
  }
  if (!names.includes('UTC')) names.push('UTC');
  return names;
}

// offsetWords is "UTC+09:00" for zone at instant now ('' when unknown).
export function offsetWords(zone, now) {
  try {
    const p = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
      .formatToParts(now)
      .find((x) => x.type === 'timeZoneName');
    if (!p) return '';
    return p.value === 'GMT' ? 'UTC' : p.value.replace('GMT', 'UTC');
  } catch (_) {
    return '';
  }
}

// fillZones fills select with the zones, chosen selected (added first
// when the browser does not list it).
export function fillZones(select, chosen, now) {
  const names = zoneNames();
  if (chosen && !names.includes(chosen)) names.unshift(chosen);
  while (select.firstChild) select.removeChild(select.firstChild);
  const at = now || Date.now();
  for (const z of names) {
    const o = document.createElement('option');
    const off = offsetWords(z, at);
    o.value = z;
    o.textContent = off ? z.replace(/_/g, ' ') + ' (' + off + ')' : z.replace(/_/g, ' ');
    select.append(o);
  }
  if (chosen) select.value = chosen;
}
