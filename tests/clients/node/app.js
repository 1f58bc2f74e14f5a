// A Node program profiled by @pyroscope/nodejs: hotA (under the tag phase=a) does
// several times the work of hotB and keeps 64 KiB buffers alive.
// Usage: node app.js SERVER APP SECONDS [cpu]. Prints the CPU seconds its loop spent, the
// seconds the SDK ran and the process's CPU seconds since it started. With `cpu`, the wall profile holds each sample's CPU time too
// (wall: {collectCpuTime: true}).
const Pyroscope = require('@pyroscope/nodejs');

const kept = [];

function hotA() {
  let total = 0;
  for (let i = 0; i < 3000000; i++) total += i * i;
  kept.push(Buffer.alloc(64 << 10));
  if (kept.length > 64) kept.shift();
  return total;
}

function hotB() {
  let total = 0;
  for (let i = 0; i < 1000000; i++) total += i;
  return total;
}

async function main() {
  const [server, app, seconds, mode] = process.argv.slice(2);
  const profiled = Date.now();
  const config = { serverAddress: server, appName: app, tags: { team: 'sre' }, flushIntervalMs: 2000 };
  if (mode === 'cpu') config.wall = { collectCpuTime: true };
  Pyroscope.init(config);
  Pyroscope.start();
  const cpu0 = process.cpuUsage();
  const start = Date.now();
  let result = 0;
  while (Date.now() - start < Number(seconds) * 1000) {
    Pyroscope.wrapWithLabels({ phase: 'a' }, () => { result += hotA(); });
    result += hotB();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(cpu0);
  await Pyroscope.stop();
  const all = process.cpuUsage(); // the process's CPU time since it started
  // The time the SDK may have sampled: from init to stop, not the loop alone.
  console.log(result % 2, (used.user + used.system) / 1e6, (Date.now() - profiled) / 1000,
    (all.user + all.system) / 1e6);
}

main();
