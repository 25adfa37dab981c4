#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (CPU) over a directory of .npy samples
// and writes every output as .npy, in the same layout as `qrun -o OUTDIR`:
//
//   node tests/interop/ort_run.js MODEL.onnx DATADIR OUTDIR [MODEL.onnx DATADIR OUTDIR ...] [--threads N]
//
// More than one triple runs each model in turn in one process: a test that
// runs dozens of models pays for Node and ONNX Runtime's start once.
// DATADIR holds one .npy file per sample (single-input model); each is fed to
// the model's first input, and output k is written as OUTDIR/<stem>.out<k>.npy.
// ONNX Runtime comes from scripts/setup_ort.sh (<repo>/.cache/ort).
//
// Exit codes follow DESIGN.md: 0 success, 1 internal failure, 2 bad input.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const REPO = path.resolve(__dirname, '..', '..');
const ORT_PATH = path.join(REPO, '.cache', 'ort', 'node_modules', 'onnxruntime-node');

class BadInput extends Error {}

// numpy descr <-> ONNX Runtime tensor type <-> typed array. Only little-endian
// (or byte-sized) descrs: the typed arrays below use the host byte order.
const DTYPES = [
  { descr: '<f4', ort: 'float32', Array: Float32Array },
  { descr: '<f8', ort: 'float64', Array: Float64Array },
  { descr: '<i8', ort: 'int64', Array: BigInt64Array },
  { descr: '<i4', ort: 'int32', Array: Int32Array },
  { descr: '<i2', ort: 'int16', Array: Int16Array },
  { descr: '<u2', ort: 'uint16', Array: Uint16Array },
  { descr: '|u1', ort: 'uint8', Array: Uint8Array },
  { descr: '|i1', ort: 'int8', Array: Int8Array },
  { descr: '|b1', ort: 'bool', Array: Uint8Array },
];
const BY_DESCR = new Map(DTYPES.map((d) => [d.descr, d]));
const BY_ORT = new Map(DTYPES.map((d) => [d.ort, d]));

const NPY_MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

// Parses a .npy file (format 1.0, 2.0 or 3.0) into { dtype, shape, data }.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  const fail = (what) => { throw new BadInput(`${file}: ${what}`); };
  if (buf.length < 10 || !buf.subarray(0, 6).equals(NPY_MAGIC)) fail('not a .npy file (bad magic)');
  const major = buf[6];
  let headerLen;
  let headerStart;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) fail('truncated header');
    headerLen = buf.readUInt32LE(8);
    headerStart = 12;
  } else {
    fail(`unsupported .npy format version ${major}.${buf[7]}`);
  }
  const dataStart = headerStart + headerLen;
  if (dataStart > buf.length) fail('truncated header');
  const header = buf.toString('latin1', headerStart, dataStart);

  // The header is a Python dict literal; these three keys are all numpy writes.
  const descrMatch = header.match(/'descr'\s*:\s*'([^']*)'/);
  const fortranMatch = header.match(/'fortran_order'\s*:\s*(True|False)/);
  const shapeMatch = header.match(/'shape'\s*:\s*\(([^)]*)\)/);
  if (!descrMatch || !fortranMatch || !shapeMatch) fail(`malformed header: ${header.trim()}`);
  const dtype = BY_DESCR.get(descrMatch[1]);
  if (!dtype) {
    fail(`unsupported dtype '${descrMatch[1]}' (supported: ${DTYPES.map((d) => d.descr).join(', ')})`);
  }
  if (fortranMatch[1] !== 'False') fail('fortran_order arrays are not supported');
  const dims = shapeMatch[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  const shape = dims.map((s) => {
    if (!/^\d+$/.test(s)) fail(`bad shape entry '${s}'`);
    return Number(s);
  });

  const count = shape.reduce((a, b) => a * b, 1);
  const nbytes = count * dtype.Array.BYTES_PER_ELEMENT;
  if (buf.length - dataStart < nbytes) {
    fail(`truncated data: shape (${shape.join(', ')}) needs ${nbytes} bytes, file has ${buf.length - dataStart}`);
  }
  // Copy into a fresh ArrayBuffer: the data offset inside the file buffer need
  // not be aligned for the typed array's element size.
  const raw = new ArrayBuffer(nbytes);
  new Uint8Array(raw).set(buf.subarray(dataStart, dataStart + nbytes));
  return { dtype, shape, data: new dtype.Array(raw) };
}

// Serializes a typed array as a .npy format 1.0 file (as numpy.save does).
function encodeNpy(descr, shape, data) {
  const shapeStr = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  // numpy pads with spaces and a final newline so the data starts on a
  // 64-byte boundary (magic 6 + version 2 + length 2 = 10 bytes before it).
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  const prefix = Buffer.alloc(10);
  NPY_MAGIC.copy(prefix, 0);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.concat([prefix, Buffer.from(header, 'latin1'), body]);
}

// Writes via a temp file + rename so a killed run never leaves a truncated file.
function writeFileAtomic(file, bytes) {
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file);
}

function usage() {
  return 'usage: node tests/interop/ort_run.js MODEL.onnx DATADIR OUTDIR [MODEL.onnx DATADIR OUTDIR ...] [--threads N]';
}

function parseArgs(argv) {
  const positional = [];
  let threads = 1;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--threads' || arg.startsWith('--threads=')) {
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (value === undefined || !/^[1-9]\d*$/.test(value)) {
        throw new BadInput(`--threads needs a positive integer, got '${value ?? ''}'`);
      }
      threads = Number(value);
    } else if (arg === '-h' || arg === '--help') {
      console.log(usage());
      process.exit(0);
    } else if (arg.startsWith('-')) {
      throw new BadInput(`unknown flag '${arg}' (${usage()})`);
    } else {
      positional.push(arg);
    }
  }
  if (positional.length === 0 || positional.length % 3 !== 0) {
    throw new BadInput(`expected MODEL DATADIR OUTDIR (one or more), got ${positional.length} arguments (${usage()})`);
  }
  const runs = [];
  for (let i = 0; i < positional.length; i += 3) {
    runs.push({ model: positional[i], dataDir: positional[i + 1], outDir: positional[i + 2] });
  }
  return { runs, threads };
}

function loadOrt() {
  if (!fs.existsSync(path.join(ORT_PATH, 'package.json'))) {
    throw new Error(`onnxruntime-node not found in ${ORT_PATH} (run scripts/setup_ort.sh)`);
  }
  return require(ORT_PATH);
}

// CPU provider, `threads` intra-op threads, one inter-op thread, all graph optimizations.
async function createSession(ort, model, threads) {
  try {
    return await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
    });
  } catch (e) {
    throw new BadInput(`${model}: ONNX Runtime cannot load the model: ${e.message}`);
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (os.endianness() !== 'LE') throw new Error('big-endian hosts are not supported');
  const ort = loadOrt();
  for (const run of args.runs) await runModel(ort, { ...run, threads: args.threads });
}

async function runModel(ort, args) {
  if (!fs.existsSync(args.model) || !fs.statSync(args.model).isFile()) {
    throw new BadInput(`${args.model}: model file not found`);
  }
  if (!fs.existsSync(args.dataDir) || !fs.statSync(args.dataDir).isDirectory()) {
    throw new BadInput(`${args.dataDir}: not a directory`);
  }
  const files = fs.readdirSync(args.dataDir).filter((f) => f.endsWith('.npy')).sort();
  if (files.length === 0) throw new BadInput(`${args.dataDir}: no .npy files`);

  const session = await createSession(ort, args.model, args.threads);
  if (session.inputNames.length !== 1) {
    throw new BadInput(`${args.model}: model has ${session.inputNames.length} inputs; ` +
      'only single-input models are supported (one .npy file = one sample)');
  }
  const inputName = session.inputNames[0];

  fs.mkdirSync(args.outDir, { recursive: true });
  for (const file of files) {
    const full = path.join(args.dataDir, file);
    const arr = readNpy(full);
    const feeds = { [inputName]: new ort.Tensor(arr.dtype.ort, arr.data, arr.shape) };
    let results;
    try {
      results = await session.run(feeds);
    } catch (e) {
      throw new BadInput(`${full}: ONNX Runtime failed on this sample: ${e.message}`);
    }
    const stem = file.slice(0, -'.npy'.length);
    session.outputNames.forEach((name, k) => {
      const t = results[name];
      const dtype = BY_ORT.get(t.type);
      if (!dtype) throw new Error(`output '${name}' has unsupported type '${t.type}'`);
      writeFileAtomic(path.join(args.outDir, `${stem}.out${k}.npy`), encodeNpy(dtype.descr, t.dims, t.data));
    });
  }
  console.log(`ran ${files.length} samples through ${path.basename(args.model)} -> ${args.outDir}`);
}

// scripts/ort_bench.js reuses the .npy reader, the loader and the session options.
module.exports = { BadInput, readNpy, loadOrt, createSession };

if (require.main === module) {
  main().catch((e) => {
    const msg = String(e && e.message ? e.message : e);
    console.error(`error: ${msg}`);
    process.exit(e instanceof BadInput ? 2 : 1);
  });
}
