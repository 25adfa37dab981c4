#!/usr/bin/env node
// Times ONNX Runtime (CPU provider) per sample, for scripts/bench.sh:
//
//   node scripts/ort_bench.js MODEL.onnx DATADIR --threads N --runs R
//
// Every .npy in DATADIR (one sample each, single-input model) is run once as
// warm-up and then R more times; prints
//   ort: MEAN ms per sample (median M ms, min m ms, cpu C ms per sample, K runs, N threads)
// the same line shape as `qrun --bench` (cpu: process CPU time, all threads). intraOpNumThreads = N,
// interOpNumThreads = 1, all graph optimizations on.
'use strict';

const fs = require('fs');
const path = require('path');
const { BadInput, readNpy, loadOrt, createSession } = require(path.join(__dirname, '..', 'tests', 'interop', 'ort_run.js'));

function parseArgs(argv) {
  const positional = [];
  const opts = { threads: 1, runs: 5 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--threads' || arg === '--runs') {
      const value = argv[++i];
      if (value === undefined || !/^[1-9]\d*$/.test(value)) throw new BadInput(`${arg} needs a positive integer`);
      opts[arg.slice(2)] = Number(value);
    } else if (arg.startsWith('-')) {
      throw new BadInput(`unknown flag '${arg}'`);
    } else {
      positional.push(arg);
    }
  }
  if (positional.length !== 2) throw new BadInput('usage: node scripts/ort_bench.js MODEL.onnx DATADIR [--threads N] [--runs R]');
  [opts.model, opts.dataDir] = positional;
  return opts;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const session = await createSession(ort, args.model, args.threads);
  if (session.inputNames.length !== 1) throw new BadInput(`${args.model}: only single-input models are supported`);
  const files = fs.readdirSync(args.dataDir).filter((f) => f.endsWith('.npy')).sort();
  if (files.length === 0) throw new BadInput(`${args.dataDir}: no .npy files`);
  const ms = [];
  let cpuUs = 0;
  for (const file of files) {
    const arr = readNpy(path.join(args.dataDir, file));
    const feeds = { [session.inputNames[0]]: new ort.Tensor(arr.dtype.ort, arr.data, arr.shape) };
    await session.run(feeds);  // warm-up
    const cpuStart = process.cpuUsage();
    for (let r = 0; r < args.runs; r++) {
      const start = process.hrtime.bigint();
      await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    const cpu = process.cpuUsage(cpuStart);
    cpuUs += cpu.user + cpu.system;
  }
  ms.sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  console.log(`ort: ${mean.toFixed(3)} ms per sample (median ${ms[ms.length >> 1].toFixed(3)} ms, ` +
              `min ${ms[0].toFixed(3)} ms, cpu ${(cpuUs / 1000 / ms.length).toFixed(3)} ms per sample, ` +
              `${ms.length} runs, ${args.threads} threads)`);
}

main().catch((e) => {
  console.error(`error: ${String(e && e.message ? e.message : e)}`);
  process.exit(e instanceof BadInput ? 2 : 1);
});
