// The seckill seed's scenario for k6: every virtual user is one buyer who
// tries once to buy goods 1, spread round-robin over the shop instances.
//
//   scripts/loadtools.sh k6 http://127.0.0.1:8081,http://127.0.0.1:8082 1500   (builds k6 into bin/ if missing)
//   bin/k6 run -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e BUYERS=1500 loadtest/k6/seckill.js
//
// Environment: BASE_URLS (comma separated), GOODS (1; a sale of many goods: a range 1-200 or a list
// 1-10,42), SKEW (uniform, or zipf:S: the first goods the hottest, rank k weighted 1/k^S),
// BUYERS (1500: the seed's JMeter threads),
// USERS (buyer mode: VU i sends X-User-ID buyer-(i mod USERS), so with fewer USERS than BUYERS
// some buyers try twice and the shop's one-per-buyer rule answers 409 already_bought; 0: anonymous),
// EXPECT_STOCK (if set, the run fails unless exactly that many purchases succeed),
// JWT_SECRET_FILE (an absolute path, or one relative to this script; a shop with auth.mode jwt: each buyer sends an HS256 token signed with the
// secret in this file, its sub the buyer: buyer-(i mod USERS), or buyer-i with USERS 0; no
// X-User-ID) with JWT_ISSUER and JWT_AUDIENCE as its iss and aud when set.
// RATE (an open loop, as a sale's buyers are: that many purchases a second arrive whatever the
// answers' pace, k6's constant-arrival-rate; with RAMP_UP, ramping-arrival-rate from 0 to RATE over
// RAMP_UP first), DURATION (10s), TIMEOUT (a buyer's patience: 5s), VUS (the VUs k6 keeps ready:
// RATE x TIMEOUT up to 3000; a purchase due while every VU is busy is dropped: dropped_iterations).
// Each open-loop buyer sends X-Request-Timeout-Ms, and 503 busy / 429 are answers, not failures.
// PATIENCE (60s in a closed loop, 0 in an open one): a buyer told to come back (any 503 or 429: 503
// queued is its place in the shop's waiting room) comes back after Retry-After (whole seconds, a
// tenth of jitter), as a browser or any HTTP library's retry does, with its place (the cookie, in the
// VU's cookie jar) and its own ids, until another answer or until PATIENCE has passed since its first
// request.
// Checks: every answer is 200 (bought) or 409 (sold out, already bought) with the shop's JSON body
// (and, in an open loop, 503 busy or 429); each buyer sends its own X-Request-ID; at the end, every
// goods' new order rows equal the pieces its stock went down by (the run fails when a goods was
// oversold), and the summary says how many orders went to buyers who had gone (order rows beyond
// the 200s).
//
//   bin/k6 run -e RATE=500 -e DURATION=10s -e RAMP_UP=1s loadtest/k6/seckill.js
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import exec from 'k6/execution';
import crypto from 'k6/crypto';
import encoding from 'k6/encoding';

const bases = (__ENV.BASE_URLS || 'http://127.0.0.1:8081,http://127.0.0.1:8082').split(',');
// goodsSet reads GOODS: numbers and ranges, comma separated.
function goodsSet(spec) {
  const out = [];
  for (const part of spec.split(',')) {
    const [lo, hi] = part.trim().split('-').map((x) => parseInt(x, 10));
    for (let g = lo; g <= (isNaN(hi) ? lo : hi); g++) out.push(g);
  }
  if (!out.length || out.some((g) => !(g > 0))) throw new Error(`GOODS=${spec}: want numbers or ranges such as 1-200`);
  return out;
}
const goods = goodsSet(__ENV.GOODS || '1');
const skew = __ENV.SKEW || 'uniform';
// cdf: with zipf:S, the cumulative weights of the goods in order (the first the hottest).
const cdf = (() => {
  if (skew === 'uniform') return null;
  const s = parseFloat(skew.replace(/^zipf:/, ''));
  if (!skew.startsWith('zipf:') || !(s > 0)) throw new Error(`SKEW=${skew}: want uniform or zipf:S`);
  const w = goods.map((_, k) => 1 / Math.pow(k + 1, s));
  const total = w.reduce((a, b) => a + b, 0);
  let acc = 0;
  return w.map((x) => (acc += x / total));
})();
function pick() {
  const r = Math.random();
  if (!cdf) return goods[Math.floor(r * goods.length)];
  const k = cdf.findIndex((c) => r <= c);
  return goods[k < 0 ? goods.length - 1 : k];
}
const runId = `k6-${Date.now().toString(36)}`;
const buyers = parseInt(__ENV.BUYERS || '1500', 10);
const users = parseInt(__ENV.USERS || '0', 10);

// The HS256 secret, read once in the init context.
const jwtSecret = __ENV.JWT_SECRET_FILE ? open(__ENV.JWT_SECRET_FILE).replace(/[\r\n]+$/, '') : '';
// token signs a bearer token for buyer, valid for an hour.
function token(buyer) {
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: buyer, iat: now, exp: now + 3600 };
  if (__ENV.JWT_ISSUER) claims.iss = __ENV.JWT_ISSUER;
  if (__ENV.JWT_AUDIENCE) claims.aud = __ENV.JWT_AUDIENCE;
  const unsigned = `${encoding.b64encode(JSON.stringify({ alg: 'HS256', typ: 'JWT' }), 'rawurl')}.${encoding.b64encode(JSON.stringify(claims), 'rawurl')}`;
  return `${unsigned}.${crypto.hmac('sha256', jwtSecret, unsigned, 'base64rawurl')}`;
}

const bought = new Counter('seckill_bought');
const soldOut = new Counter('seckill_sold_out');
const alreadyBought = new Counter('seckill_already_bought');
const other = new Counter('seckill_other');
const refused = new Counter('seckill_refused');
const ordersCreated = new Counter('seckill_orders_created');

const comeBacks = new Counter('seckill_came_back');

const rate = parseFloat(__ENV.RATE || '0');
const openLoop = rate > 0;
const patience = parseFloat(__ENV.PATIENCE || (openLoop ? '0' : '60'));
// comesBack: the answer asks its buyer to come back later.
function comesBack(res, code) {
  return patience > 0 && (res.status === 503 || res.status === 429); // each says when: Retry-After
}
const duration = __ENV.DURATION || '10s';
const rampUp = __ENV.RAMP_UP || '';
const timeout = __ENV.TIMEOUT || (openLoop ? '5s' : '300s');
const seconds = (d) => {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(d);
  if (!m) throw new Error(`${d}: want a duration such as 500ms, 10s or 1m`);
  return parseFloat(m[1]) * { ms: 0.001, s: 1, m: 60 }[m[2]];
};
const timeoutMs = Math.round(seconds(timeout) * 1000);
const vus = parseInt(__ENV.VUS || String(Math.min(3000, Math.ceil(rate * seconds(timeout)))), 10);

const thresholds = {
  checks: ['rate==1.0'], // every answer is a 200 or a 409 with the shop's JSON
  seckill_other: ['count==0'],
};
if (__ENV.EXPECT_STOCK) {
  thresholds.seckill_bought = [`count==${parseInt(__ENV.EXPECT_STOCK, 10)}`];
}

function scenario() {
  if (!openLoop) return { executor: 'per-vu-iterations', vus: buyers, iterations: 1, maxDuration: '10m' };
  if (!rampUp) {
    return { executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration, preAllocatedVUs: vus, maxVUs: vus };
  }
  const held = Math.max(0, seconds(duration) - seconds(rampUp));
  return {
    executor: 'ramping-arrival-rate', startRate: 0, timeUnit: '1s', preAllocatedVUs: vus, maxVUs: vus,
    stages: [{ target: rate, duration: rampUp }, { target: rate, duration: `${held}s` }],
  };
}

export const options = {
  scenarios: { flash_sale: scenario() },
  thresholds,
  summaryTrendStats: ['avg', 'p(50)', 'p(90)', 'p(99)', 'max'],
};

export default function () {
  // An open loop's buyer is its iteration; a closed loop's its VU.
  const n = openLoop ? exec.scenario.iterationInTest : exec.vu.idInTest;
  const base = bases[n % bases.length];
  const headers = { 'X-Request-ID': `${runId}-${n}` };
  if (openLoop) headers['X-Request-Timeout-Ms'] = String(timeoutMs);
  const buyer = `buyer-${users > 0 ? n % users : n}`;
  if (jwtSecret) headers.Authorization = `Bearer ${token(buyer)}`;
  else if (users > 0) headers['X-User-ID'] = buyer;
  const path = `/goods-stock/${pick()}`;
  const expected = openLoop || patience > 0 ? http.expectedStatuses(200, 409, 429, 503) : http.expectedStatuses(200, 409);
  const codeOf = (r) => {
    try {
      return r.json('code');
    } catch (e) {
      return 'non-json';
    }
  };
  let res = http.get(`${base}${path}`, { headers, timeout, responseCallback: expected });
  let code = codeOf(res);
  // A patient buyer comes back as told, with its place, to the next instance.
  const until = Date.now() + patience * 1000;
  for (let tries = 1; comesBack(res, code); tries++) {
    const ms = 1000 * (parseInt(res.headers['Retry-After'] || '1', 10) || 1);
    const wait = ms * (0.9 + 0.2 * Math.random());
    if (Date.now() + wait > until) break;
    sleep(wait / 1000);
    comeBacks.add(1);
    res = http.get(`${bases[(n + tries) % bases.length]}${path}`, { headers, timeout, responseCallback: expected });
    code = codeOf(res);
  }
  const shed = openLoop && ((res.status === 503 && (code === 'busy' || code === 'queued')) || (res.status === 429 && code === 'too_many_requests'));
  if (openLoop && res.status === 0) {
    other.add(1); // the buyer's timeout: gone (k6 counts it in http_req_failed)
    return;
  }
  check(res, {
    'status is 200 or 409 (or, open loop, 503 busy / 429)': (r) => r.status === 200 || r.status === 409 || shed,
    'body code matches status': () =>
      (res.status === 200 && code === 'ok') || (res.status === 409 && (code === 'sold_out' || code === 'already_bought')) || shed,
  });
  if (shed) {
    refused.add(1);
  } else if (res.status === 200) {
    bought.add(1);
  } else if (res.status === 409 && code === 'sold_out') {
    soldOut.add(1);
  } else if (res.status === 409 && code === 'already_bought') {
    alreadyBought.add(1);
  } else {
    other.add(1);
  }
}

// The goods' rows before the sale, and after it: every goods' new order rows
// equal the pieces its stock went down by, or the run fails. The shop counts a
// goods' orders at most once a second and says how old its count is
// (ordersAgeMs): each read waits for a count made after it began.
function readGoods() {
  const out = {};
  const since = Date.now();
  for (const g of goods) {
    for (let i = 0; ; i++) {
      const r = http.get(`${bases[0]}/goods/${g}`);
      if (r.status !== 200) throw new Error(`GET /goods/${g}: ${r.status}`);
      const counted = Date.now() - (r.json('ordersAgeMs') || 0);
      if (counted >= since || i >= 40) {
        out[g] = { stock: r.json('stock'), orders: r.json('orders') };
        break;
      }
      sleep(Math.max(0.05, (since - counted) / 1000));
    }
  }
  return out;
}

export function setup() {
  return readGoods();
}

export function teardown(before) {
  let after = readGoods();
  // In an open loop a buyer who left may still be sold to: let the order rows settle.
  for (let i = 0; openLoop && i < 40; i++) {
    sleep(0.25);
    const again = readGoods();
    if (goods.every((g) => again[g].orders === after[g].orders)) break;
    after = again;
  }
  ordersCreated.add(goods.reduce((n, g) => n + after[g].orders - before[g].orders, 0));
  const bad = goods.filter((g) => after[g].orders - before[g].orders !== before[g].stock - after[g].stock);
  if (bad.length) {
    throw new Error(`oversold goods ${bad.join(', ')}: order rows created differ from the stock sold`);
  }
}

export function handleSummary(data) {
  const count = (name) => (data.metrics[name] ? data.metrics[name].values.count : 0);
  let line = `seckill: ${count('seckill_bought')} bought (200), ${count('seckill_sold_out')} sold out (409), ` +
    `${count('seckill_already_bought')} already bought (409), ${count('seckill_other')} other; ` +
    `buyers came back ${count('seckill_came_back')} times (patience ${patience}s)\n`;
  if (openLoop) {
    const p = (name, q) => (data.metrics[name] && data.metrics[name].values[q] !== undefined ? data.metrics[name].values[q].toFixed(0) : '-');
    line += `seckill open loop: ${rate}/s for ${duration}${rampUp ? ` (ramp-up ${rampUp})` : ''}, ${count('iterations')} sent, ` +
      `${count('dropped_iterations')} dropped (no free VU: k6 could not keep the rate), ${count('seckill_refused')} refused (503 busy / 429), ` +
      `${count('seckill_other')} timed out or other; request p99 ${p('http_req_duration', 'p(99)')} ms; ` +
      `sold to buyers who had gone: ${count('seckill_orders_created') - count('seckill_bought')}\n`;
  }
  return { stdout: line };
}
