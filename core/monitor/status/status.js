// leafbox status page: polls the monitoring endpoints of the server that
// served it and renders what they say. Read-only; no framework, nothing
// fetched from elsewhere. Every value from JSON reaches the page as text
// (textContent or an attribute), never as HTML.
'use strict';
(function () {
  const params = new URLSearchParams(location.search);
  let every = parseFloat(params.get('refresh'));
  if (!(every >= 0.2 && every <= 600)) every = 2; // seconds between polls

  const $ = (id) => document.getElementById(id);
  const trends = new Map(); // uplink name -> last backlog seen
  let lastOK = null; // Date of the last complete poll

  // el builds an element; children are nodes or text.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of kids.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  // badge is a status word in a colour; the word carries the meaning.
  function badge(level, text, big) {
    return el('span', { class: 'badge ' + level + (big ? ' big' : ''), 'data-state': level }, text);
  }

  // kv is a definition list of [label, value] rows; empty values are left out.
  function kv(rows) {
    const dl = el('dl', { class: 'kv' });
    for (const [k, v] of rows) {
      if (v === undefined || v === null || v === '') continue;
      dl.append(el('dt', null, k), el('dd', null, v));
    }
    return dl;
  }

  function card(level, attrs, title, status, ...body) {
    const a = Object.assign({ class: 'card ' + level }, attrs);
    return el('article', a, el('div', { class: 'card-head' }, el('h3', null, title), status), ...body);
  }

  function empty(text) { return el('p', { class: 'empty' }, text); }

  // Numbers for people.
  function count(n) {
    n = Math.round(Number(n) || 0);
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  function dec(n) { n = Number(n) || 0; return n < 10 ? n.toFixed(1) : count(n); }
  function bytes(n) {
    n = Number(n) || 0;
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(Math.round(n)) : dec(n)) + ' ' + units[i];
  }
  function age(sec) {
    sec = Math.max(0, Number(sec) || 0);
    if (sec < 1) return sec > 0 ? 'under 1 s' : '0 s';
    const s = Math.floor(sec % 60), m = Math.floor(sec / 60) % 60, h = Math.floor(sec / 3600) % 24, d = Math.floor(sec / 86400);
    if (sec < 60) return s + ' s';
    if (sec < 3600) return m + ' min ' + s + ' s';
    if (sec < 86400) return h + ' h ' + m + ' min';
    return d + ' d ' + h + ' h';
  }
  function since(iso) {
    const t = Date.parse(iso);
    if (!t) return '';
    return age((Date.now() - t) / 1000) + ' ago';
  }
  // goDuration reads a Go duration string ("1.5ms", "2m3s") as seconds.
  function goDuration(s) {
    const units = { ns: 1e-9, us: 1e-6, 'µs': 1e-6, 'μs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
    let total = 0, seen = false;
    for (const m of String(s || '').matchAll(/([0-9.]+)(ns|us|µs|μs|ms|s|m|h)/g)) {
      total += parseFloat(m[1]) * units[m[2]];
      seen = true;
    }
    return seen ? total : null;
  }
  function rtt(s) {
    const sec = goDuration(s);
    if (sec === null) return 'not measured yet';
    if (sec < 1) return dec(sec * 1000) + ' ms';
    return dec(sec) + ' s';
  }
  // pct rounds down, so that "100% used" means full.
  function pct(part, whole) { return whole > 0 ? Math.floor(100 * part / whole) : 0; }
  function plural(n, one, many) { return count(n) + ' ' + (Math.round(n) === 1 ? one : many); }
  function meter(usedPct, level) {
    const bar = el('span');
    bar.style.width = Math.min(100, Math.max(0, usedPct)) + '%'; // CSSOM, allowed by the page's CSP
    return el('div', { class: 'meter ' + level, role: 'presentation' }, bar);
  }
  function clock(iso) {
    const t = new Date(iso);
    return isNaN(t) ? '' : t.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  async function getJSON(path) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), 5000);
    try {
      const r = await fetch(path, { cache: 'no-store', signal: ctl.signal, headers: { Accept: 'application/json' } });
      if (r.status === 404) return { missing: true, body: null };
      const text = await r.text();
      let body = null;
      try { body = JSON.parse(text); } catch (e) { body = null; }
      return { status: r.status, body };
    } finally {
      clearTimeout(timer);
    }
  }

  // ---- sections ----

  function renderLinks(varz, leafz, uplinks) {
    const remotes = (varz.leaf && varz.leaf.remotes) || [];
    const leafs = (leafz && leafz.leafs) || [];
    const spokes = leafs.filter((l) => l.is_spoke);
    const attached = leafs.filter((l) => !l.is_spoke);
    const cards = [], down = [];
    remotes.forEach((r, i) => {
      const l = spokes.find((s) => s.id === i + 1);
      const urls = r.urls || [];
      const title = 'Hub link ' + (i + 1) + (r.local_account && r.local_account !== '$G' ? ' (account ' + r.local_account + ')' : '');
      const url = urls.length ? urls[0] + (urls.length > 1 ? ' (+' + (urls.length - 1) + ' more)' : '') : '';
      if (l) {
        cards.push(card('ok', { 'data-link': i + 1, 'data-state': 'up' }, title, badge('ok', 'UP', true),
          kv([
            ['Hub', l.name], ['Address', l.ip ? l.ip + ':' + l.port : ''], ['Round trip', rtt(l.rtt)],
            ['Configured URL', url], ['Messages', 'in ' + count(l.in_msgs) + ' · out ' + count(l.out_msgs)],
            ['Compression', l.compression], ['Interest', count(l.subscriptions) + ' subjects'],
          ])));
      } else {
        down.push(title);
        // With one remote every uplink forwards over it, so their view of
        // the link says more than "not connected".
        const states = remotes.length === 1 ? [...new Set(uplinks.map((u) => u.link_state).filter(Boolean))] : [];
        cards.push(card('bad', { 'data-link': i + 1, 'data-state': 'down' }, title, badge('bad', 'DOWN', true),
          kv([
            ['Configured URL', url], ['Link state', states.length ? states.join(', ') : 'not connected'],
            ['Meanwhile', uplinks.length ? 'messages for the hub are kept in the outbox' : ''],
          ])));
      }
    });
    spokes.filter((s) => !(s.id >= 1 && s.id <= remotes.length)).forEach((l) => {
      cards.push(card('ok', { 'data-link': l.id, 'data-state': 'up' }, 'Hub link ' + l.id, badge('ok', 'UP', true),
        kv([['Hub', l.name], ['Address', l.ip + ':' + l.port], ['Round trip', rtt(l.rtt)]])));
    });
    if (attached.length) {
      const list = el('ul', null, attached.map((l) =>
        el('li', null, (l.name || 'leaf ' + l.id) + ' from ' + l.ip + ':' + l.port + ' · round trip ' + rtt(l.rtt))));
      cards.push(card('ok', { 'data-attached': attached.length }, 'Leaf nodes attached here', badge('ok', count(attached.length) + ' CONNECTED'), list));
    }
    if (!cards.length) cards.push(empty('No hub links configured: this box does not connect to a hub.'));
    $('links-body').replaceChildren(...cards);
    return down;
  }

  function uplinkCard(u) {
    const prev = trends.get(u.name);
    const msgs = Number(u.backlog_msgs) || 0;
    let trend = 'steady';
    if (prev !== undefined && msgs > prev) trend = 'growing';
    else if (prev !== undefined && msgs < prev) trend = 'draining';
    else if (msgs === 0) trend = 'empty';
    trends.set(u.name, msgs);
    const trendText = { growing: 'growing \u25B2', draining: 'draining \u25BC', empty: 'empty', steady: 'steady' }[trend];

    const linkUp = u.link_state === 'connected';
    let level = 'ok', word = msgs > 0 ? 'SENDING' : 'UP TO DATE';
    if (!linkUp) { level = 'warn'; word = 'LINK DOWN: STORING'; }
    else if (u.waiting) {
      const words = { rate: 'SENDING AT RATE CAP', priority: 'QUEUED BEHIND HIGHER PRIORITY', budget: 'PAUSED: DAILY BUDGET USED' };
      level = u.waiting === 'budget' ? 'warn' : 'ok';
      word = words[u.waiting] || 'WAITING: ' + String(u.waiting).toUpperCase();
    }
    const dropped = Object.entries(u.dropped || {}).filter(([, n]) => n > 0);
    if (dropped.length && level === 'ok') level = 'warn';

    // The drain rate is a moving average: just after the link comes
    // back it is still zero while the backlog already shrinks.
    let eta = '', rate = dec(u.rate_msgs) + ' msg/s · ' + bytes(u.rate_bytes) + '/s';
    if (msgs === 0) eta = 'nothing to send';
    else if (u.eta_seconds > 0) eta = age(u.eta_seconds);
    else if (!linkUp) eta = 'once the link is back';
    else eta = trend === 'draining' ? 'estimating\u2026' : 'unknown: not draining';
    if (!(u.rate_msgs > 0) && trend === 'draining') rate = 'measuring\u2026';

    const deadLetters = Number(u.dead_letter_msgs) || 0;
    const dlLink = el('a', { href: 'uplinkz/deadletter?uplink=' + encodeURIComponent(u.name) }, 'list');
    return card(level, { 'data-uplink': u.name, 'data-link-state': u.link_state, 'data-backlog': msgs, 'data-trend': trend },
      'Uplink ' + u.name, badge(level, word),
      el('p', null, el('span', { class: 'big-num', 'data-field': 'backlog' }, count(msgs)), ' messages waiting · ',
        el('span', { 'data-field': 'trend' }, trendText)),
      kv([
        ['Backlog size', bytes(u.backlog_bytes)],
        ['Oldest waiting', msgs > 0 ? age(u.oldest_age_seconds) : 'none'],
        ['Drain rate', rate],
        ['Time to drain', eta],
        ['Link', u.link_state], ['Forwarder', u.state],
        ['Delivered to hub', count(u.acked) + ' messages · ' + bytes(u.acked_bytes)],
        ['In flight', count(u.in_flight)],
        ['Dropped', dropped.length ? dropped.map(([r, n]) => r.replace(/_/g, ' ') + ': ' + count(n)).join(', ') : 'none'],
        ['Dead letters', deadLetters ? el('span', { class: 'error' }, count(deadLetters) + ' held · ', dlLink) : 'none'],
        ['Rate cap', u.max_rate ? bytes(u.max_rate) + '/s' : ''],
        ['Daily budget', u.daily_budget ? bytes(u.budget_used) + ' of ' + bytes(u.daily_budget) + ' used today' : ''],
        // An error the uplink has since recovered from is history, not an alarm.
        ['Last error', u.last_error ? el('span', { class: level === 'ok' && msgs === 0 ? '' : 'error' },
          u.last_error + (u.last_error_at ? ' (' + since(u.last_error_at) + ')' : '')) : ''],
        ['Last refusal', u.last_rejection ? el('span', { class: 'error' }, u.last_rejection) : ''],
      ]));
  }

  function renderUplinks(uplinkz) {
    const ups = (uplinkz && uplinkz.uplinks) || [];
    const cards = ups.map(uplinkCard);
    const lim = uplinkz && uplinkz.limits;
    if (lim && (lim.max_rate || lim.daily_budget)) {
      cards.push(card(lim.exhausted ? 'warn' : 'ok', null, 'Shared limits', badge(lim.exhausted ? 'warn' : 'ok', lim.exhausted ? 'BUDGET USED UP' : 'WITHIN LIMITS'),
        kv([['Rate cap', lim.max_rate ? bytes(lim.max_rate) + '/s' : 'none'],
          ['Daily budget', lim.daily_budget ? bytes(lim.budget_used) + ' of ' + bytes(lim.daily_budget) + ' (' + lim.day + ')' : 'none']])));
    }
    $('uplinks-body').replaceChildren(...(cards.length ? cards : [empty('No uplinks configured.')]));
    return ups;
  }

  function renderDownlinks(uplinkz) {
    const downs = (uplinkz && uplinkz.downlinks) || [];
    const cards = downs.map((d) => {
      const up = d.link_state === 'connected';
      const level = !up ? 'bad' : (d.failed > 0 || d.last_error ? 'warn' : 'ok');
      return card(level, { 'data-downlink': d.name, 'data-link-state': d.link_state }, 'Downlink ' + d.name,
        badge(level, up ? String(d.state || 'up').toUpperCase() : 'LINK DOWN'),
        kv([
          ['Hub stream', d.stream + (d.durable ? ' (consumer ' + d.durable + ')' : '')],
          ['Waiting on hub', count(d.pending) + ' messages'],
          ['Delivered here', count(d.delivered)], ['Last sequence', count(d.last_seq)],
          ['Redelivered', count(d.redelivered)], ['Failed locally', count(d.failed)],
          ['Last error', d.last_error ? el('span', { class: 'error' }, d.last_error) : ''],
        ]));
    });
    $('downlinks-body').replaceChildren(...(cards.length ? cards : [empty('No downlinks configured.')]));
  }

  function renderBridges(bridgez) {
    const body = $('bridges-body');
    if (!bridgez || bridgez.missing || !bridgez.body) {
      body.replaceChildren(empty('No bridges configured.'));
      return;
    }
    const list = bridgez.body.bridges || [];
    if (!list.length) { body.replaceChildren(empty('No bridges configured.')); return; }
    body.replaceChildren(...list.map((b) => {
      const state = String(b.state || 'unknown');
      const level = /^(connected|running|ok|up)$/i.test(state) ? 'ok' : 'bad';
      const rows = [];
      for (const [k, v] of Object.entries(b)) {
        if (k === 'drops' && v && typeof v === 'object') {
          const lost = Object.entries(v).filter(([, n]) => n > 0).map(([reason, n]) => count(n) + ' ' + reason.replace(/_/g, ' '));
          rows.push(['dropped', lost.length ? lost.join(', ') : 'none']);
          continue;
        }
        if (k === 'name' || k === 'state' || v === null || typeof v === 'object') continue;
        rows.push([k.replace(/_/g, ' '), typeof v === 'number' ? count(v) : String(v)]);
      }
      const devices = Array.isArray(b.devices) ? el('ul', null, b.devices.map((d) =>
        el('li', null, typeof d === 'object' ? (d.name || d.id || '') + (d.state ? ': ' + d.state : '') : String(d)))) : null;
      return card(level, { 'data-bridge': b.name }, 'Bridge ' + (b.name || ''), badge(level, state.toUpperCase()), kv(rows), devices);
    }));
  }

  function renderStreams(jsz) {
    const body = $('streams-body');
    const j = jsz && jsz.body;
    if (!j || j.disabled) { body.replaceChildren(empty('JetStream is off: no streams.')); return; }
    const rows = [];
    for (const acc of j.account_details || []) {
      for (const s of acc.stream_detail || []) {
        const st = s.state || {};
        rows.push(el('tr', { 'data-stream': s.name },
          el('td', { class: 'name' }, s.name), el('td', { class: 'opt' }, acc.name),
          el('td', { class: 'num' }, count(st.messages)), el('td', { class: 'num' }, bytes(st.bytes)),
          el('td', { class: 'num' }, count(st.consumer_count))));
      }
    }
    const cfg = j.config || {};
    const summary = el('p', null, plural(j.streams, 'stream', 'streams') + ' · ' + plural(j.messages, 'message', 'messages') + ' · ' + bytes(j.storage) + ' on disk' +
      (cfg.max_storage > 0 ? ' of ' + bytes(cfg.max_storage) + ' allowed' : '') + ' · ' + bytes(j.memory) + ' in memory');
    if (!rows.length) { body.replaceChildren(summary, empty('No streams.')); return; }
    body.replaceChildren(summary, el('div', { class: 'table-wrap' }, el('table', null,
      el('thead', null, el('tr', null, el('th', null, 'Stream'), el('th', { class: 'opt' }, 'Account'),
        el('th', { class: 'num' }, 'Messages'), el('th', { class: 'num' }, 'Size'), el('th', { class: 'num' }, 'Consumers'))),
      el('tbody', null, rows))));
  }

  // headroom is a level and a meter for used of total, free under low.
  function headroom(used, total, lowFree) {
    const p = pct(used, total);
    const level = total - used < lowFree || p >= 95 ? 'bad' : p >= 85 ? 'warn' : 'ok';
    return { level, p, meter: meter(p, level) };
  }

  function renderBox(varz, reasons) {
    const cards = [];
    cards.push(card('ok', { 'data-box': 'identity' }, 'Identity', null, kv([
      ['Name', varz.server_name], ['Server ID', varz.server_id], ['Public key', varz.public_key],
      ['Version', (varz.leafbox_version ? 'leafbox ' + varz.leafbox_version + ' · ' : '') + 'NATS ' + varz.version],
      ['Commit', varz.git_commit], ['Built', varz.build_date],
      ['Up for', (varz.start && varz.now ? age((Date.parse(varz.now) - Date.parse(varz.start)) / 1000) : varz.uptime) +
        (varz.start ? ' (since ' + clock(varz.start) + ')' : '')],
      ['Clients', count(varz.connections) + ' connected'],
      ['Leaf links', count(varz.leafnodes) + ' connected'],
    ])));

    const c = varz.clock;
    if (c) {
      const level = c.trusted ? 'ok' : 'warn';
      const source = { os: 'system clock (NTP synced)', hub: 'the hub' }[c.source] || c.source;
      if (!c.trusted) reasons.push(['warn', 'Clock not trusted: times shown may be wrong until NTP or the hub vouches for them']);
      cards.push(card(level, { 'data-box': 'clock', 'data-trusted': c.trusted }, 'Clock', badge(level, c.trusted ? 'TRUSTED' : 'NOT TRUSTED'), kv([
        ['Time', clock(c.now)], ['Vouched for by', c.trusted ? source : 'nobody yet'],
        ['Offset from local clock', Math.abs(c.offset_seconds || 0) >= 0.05 ? (c.offset_seconds > 0 ? '+' : '\u2212') + dec(Math.abs(c.offset_seconds)) + ' s' : ''],
        ['Last known good', clock(c.last_known_good)], ['Rejected', c.rejected],
      ])));
    }

    const rows = [];
    let level = 'ok';
    const raise = (l) => { if (l === 'bad' || (l === 'warn' && level === 'ok')) level = l; };
    const sys = varz.system || {};
    if (varz.gomemlimit > 0) {
      const h = headroom(varz.mem, varz.gomemlimit, 0);
      raise(h.level);
      rows.push(['Memory', el('span', null, bytes(varz.mem) + ' of ' + bytes(varz.gomemlimit) + ' limit (' + h.p + '%)', h.meter)]);
    } else {
      rows.push(['Memory', bytes(varz.mem) + ' resident']);
    }
    if (sys.mem_total > 0) {
      const h = headroom(sys.mem_total - sys.mem_available, sys.mem_total, 32 << 20);
      raise(h.level);
      rows.push(['Board memory', el('span', null, bytes(sys.mem_available) + ' free of ' + bytes(sys.mem_total) + ' (' + h.p + '% used)', h.meter)]);
    }
    if (sys.disk && sys.disk.total > 0) {
      const d = sys.disk;
      const h = headroom(d.total - d.available, d.total, 64 << 20);
      raise(h.level);
      if (h.level !== 'ok') reasons.push([h.level, 'Disk nearly full: ' + bytes(d.available) + ' free at ' + d.path]);
      rows.push(['Disk', el('span', null, bytes(d.available) + ' free of ' + bytes(d.total) + ' (' + h.p + '% used) at ' + d.path, h.meter)]);
    }
    const js = varz.jetstream || {};
    if (js.config && js.stats && js.config.max_storage > 0) {
      const h = headroom(js.stats.storage, js.config.max_storage, 0);
      raise(h.level);
      rows.push(['Stream storage', el('span', null, bytes(js.stats.storage) + ' of ' + bytes(js.config.max_storage) + ' allowed (' + h.p + '% used)', h.meter)]);
    }
    rows.push(['CPU', dec(varz.cpu) + '% of one core · ' + varz.cores + ' cores']);
    cards.push(card(level, { 'data-box': 'resources' }, 'Headroom', badge(level, { ok: 'ENOUGH', warn: 'GETTING TIGHT', bad: 'TOO LITTLE' }[level]), kv(rows)));
    $('box-body').replaceChildren(...cards);
  }

  function renderOverall(healthz, reasons, downLinks) {
    const h = (healthz && healthz.body) || {};
    let level = 'ok';
    if (h.status && h.status !== 'ok') {
      level = 'bad';
      const errs = h.errors || (h.error ? [{ error: h.error }] : []);
      for (const e of errs) reasons.unshift(['bad', e.error || e.type]);
      if (!errs.length) reasons.unshift(['bad', 'Health check: ' + h.status]);
    }
    for (const d of h.degraded || []) reasons.push(['warn', d.error || d.type]);
    for (const name of downLinks) reasons.unshift(['bad', name + ' is down']);
    // A link down or a warning asks for attention; only a failed health
    // check is a problem for the box as a whole.
    if (level === 'ok' && reasons.length) level = 'warn';
    const words = { ok: 'ALL OK', warn: 'ATTENTION', bad: 'PROBLEM' };
    const o = $('overall');
    o.className = 'badge big ' + level;
    o.hidden = false;
    o.dataset.state = level;
    o.textContent = words[level];
    const list = $('reasons');
    list.replaceChildren(...reasons.map(([l, text]) => el('li', { 'data-level': l }, (l === 'bad' ? 'Problem: ' : 'Note: ') + text)));
    list.hidden = reasons.length === 0;
    return words[level];
  }

  async function poll() {
    let res;
    try {
      res = await Promise.all(['varz', 'healthz?details=true', 'leafz', 'uplinkz', 'jsz?streams=true', 'bridgez'].map(getJSON));
    } catch (e) {
      noContact(e);
      return;
    }
    const [varz, healthz, leafz, uplinkz, jsz, bridgez] = res;
    if (!varz.body) { noContact(new Error('/varz answered ' + varz.status)); return; }
    const v = varz.body;
    document.body.classList.remove('stale');
    $('live').hidden = false;
    $('name').textContent = v.server_name || v.server_id;
    $('identity').textContent = 'Server ID ' + v.server_id + (v.leafbox_version ? ' · leafbox ' + v.leafbox_version : '');
    const reasons = [];
    const ups = renderUplinks(uplinkz.body);
    const down = renderLinks(v, leafz.body, ups);
    renderDownlinks(uplinkz.body);
    renderBridges(bridgez);
    renderStreams(jsz);
    renderBox(v, reasons);
    const word = renderOverall(healthz, reasons, down);
    lastOK = new Date();
    $('updated').textContent = 'Updated ' + lastOK.toLocaleTimeString() + ' · every ' + every + ' s';
    document.title = word + ' · ' + (v.server_name || v.server_id) + ' · leafbox';
  }

  function noContact(err) {
    document.body.classList.add('stale');
    const o = $('overall');
    o.className = 'badge big bad';
    o.hidden = false;
    o.dataset.state = 'nocontact';
    o.textContent = 'NO CONTACT';
    $('updated').textContent = 'The box does not answer' + (err && err.name === 'AbortError' ? ' (timed out)' : '') +
      (lastOK ? '; the values below are from ' + lastOK.toLocaleTimeString() : '');
    if (err && err.name !== 'AbortError' && err.name !== 'TypeError') console.warn('leafbox status:', err);
    document.title = 'NO CONTACT · leafbox';
  }

  async function loop() {
    try {
      await poll();
    } catch (e) {
      // A value the page cannot render must not stop the updates.
      console.error('leafbox status: rendering failed:', e);
    }
    setTimeout(loop, every * 1000);
  }
  loop();
})();
