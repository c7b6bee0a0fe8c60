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
// Checks: every answer is 200 (bought) or 409 (sold out, already bought) with the shop's JSON body;
// each buyer sends its own X-Request-ID; at the end, every goods' new order rows equal the pieces its
// stock went down by (the run fails when a goods was oversold).
import http from 'k6/http';
import { check } from 'k6';
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

const thresholds = {
  checks: ['rate==1.0'], // every answer is a 200 or a 409 with the shop's JSON
  seckill_other: ['count==0'],
};
if (__ENV.EXPECT_STOCK) {
  thresholds.seckill_bought = [`count==${parseInt(__ENV.EXPECT_STOCK, 10)}`];
}

export const options = {
  scenarios: {
    flash_sale: {
      executor: 'per-vu-iterations',
      vus: buyers,
      iterations: 1,
      maxDuration: '10m',
    },
  },
  thresholds,
  summaryTrendStats: ['avg', 'p(50)', 'p(90)', 'p(99)', 'max'],
};

export default function () {
  const base = bases[exec.vu.idInTest % bases.length];
  const headers = { 'X-Request-ID': `${runId}-${exec.vu.idInTest}` };
  const buyer = `buyer-${users > 0 ? exec.vu.idInTest % users : exec.vu.idInTest}`;
  if (jwtSecret) headers.Authorization = `Bearer ${token(buyer)}`;
  else if (users > 0) headers['X-User-ID'] = buyer;
  const res = http.get(`${base}/goods-stock/${pick()}`, {
    headers,
    timeout: '300s',
    responseCallback: http.expectedStatuses(200, 409),
  });
  let code = '';
  try {
    code = res.json('code');
  } catch (e) {
    code = 'non-json';
  }
  check(res, {
    'status is 200 or 409': (r) => r.status === 200 || r.status === 409,
    'body code matches status': () =>
      (res.status === 200 && code === 'ok') || (res.status === 409 && (code === 'sold_out' || code === 'already_bought')),
  });
  if (res.status === 200) {
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
// equal the pieces its stock went down by, or the run fails.
function readGoods() {
  const out = {};
  for (const g of goods) {
    const r = http.get(`${bases[0]}/goods/${g}`);
    if (r.status !== 200) throw new Error(`GET /goods/${g}: ${r.status}`);
    out[g] = { stock: r.json('stock'), orders: r.json('orders') };
  }
  return out;
}

export function setup() {
  return readGoods();
}

export function teardown(before) {
  const after = readGoods();
  const bad = goods.filter((g) => after[g].orders - before[g].orders !== before[g].stock - after[g].stock);
  if (bad.length) {
    throw new Error(`oversold goods ${bad.join(', ')}: order rows created differ from the stock sold`);
  }
}

export function handleSummary(data) {
  const count = (name) => (data.metrics[name] ? data.metrics[name].values.count : 0);
  const line = `seckill: ${count('seckill_bought')} bought (200), ${count('seckill_sold_out')} sold out (409), ` +
    `${count('seckill_already_bought')} already bought (409), ${count('seckill_other')} other\n`;
  return { stdout: line };
}
