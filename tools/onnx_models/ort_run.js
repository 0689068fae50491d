#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (npm onnxruntime-node, CPU): the reference outputs of
// the real-model fixtures and the peer of `scripts/bench.sh onnx`.
//
//   node tools/onnx_models/ort_run.js --model DIR/model.onnx --inputs DIR/test_data_set_0 \
//        [--write-outputs DIR/test_data_set_0] [--runs 50 --warmup 5 --threads 2] \
//        [--json result.json] [--name LABEL] [--ort FOLDER]
//
// Inputs are DIR/input_K.pb, serialized ONNX TensorProto with raw_data (what onnx's
// numpy_helper writes), given to the graph's inputs in order; --write-outputs writes the
// graph's outputs, in order, as output_K.pb in the same format. --runs N times N runs after
// --warmup runs and reports the median in ms. --ort is the folder where onnxruntime-node was
// installed (`ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts onnxruntime-node`);
// default $ORT_NODE_DIR, else Node's own module lookup.
'use strict';
const fs = require('fs');
const path = require('path');

function parseArgs(argv) {
  const args = {runs: 0, warmup: 3, threads: 1};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-/g, '_');
    if (i + 1 >= argv.length) throw new Error(`ort_run: ${argv[i]} needs a value`);
    args[key] = argv[i + 1];
  }
  for (const k of ['runs', 'warmup', 'threads']) args[k] = Number(args[k]);
  if (!args.model || !args.inputs) throw new Error('ort_run: --model and --inputs are required');
  return args;
}

function loadOrt(folder) {
  const dir = folder || process.env.ORT_NODE_DIR;
  if (!dir) return require('onnxruntime-node');
  return require(require.resolve('onnxruntime-node', {paths: [path.resolve(dir)]}));
}

// TensorProto.DataType -> [ort type name, typed array class]
const TYPES = {
  1: ['float32', Float32Array], 11: ['float64', Float64Array], 6: ['int32', Int32Array],
  7: ['int64', BigInt64Array], 3: ['int8', Int8Array], 2: ['uint8', Uint8Array],
  9: ['bool', Uint8Array],
};
const CODES = Object.fromEntries(Object.entries(TYPES).map(([code, [name]]) => [name, +code]));

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('ort_run: truncated varint');
    const b = buf[pos++];
    value |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [value, pos];
    shift += 7n;
  }
}

// The fields of TensorProto this format uses: dims (1), data_type (2), name (8), raw_data (9).
function decodeTensor(buf, what) {
  const t = {dims: [], dataType: 0, name: '', raw: null};
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      if (field === 1) t.dims.push(Number(BigInt.asIntN(64, v)));
      if (field === 2) t.dataType = Number(v);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const body = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
      if (field === 1) {  // packed dims
        for (let p = 0; p < body.length;) {
          let v;
          [v, p] = readVarint(body, p);
          t.dims.push(Number(BigInt.asIntN(64, v)));
        }
      } else if (field === 8) {
        t.name = body.toString('utf8');
      } else if (field === 9) {
        t.raw = body;
      } else {
        throw new Error(`ort_run: ${what}: field ${field} is not supported (raw_data only)`);
      }
    } else if (wire === 5) {
      pos += 4;
    } else if (wire === 1) {
      pos += 8;
    } else {
      throw new Error(`ort_run: ${what}: bad wire type ${wire}`);
    }
  }
  if (!TYPES[t.dataType]) throw new Error(`ort_run: ${what}: data type ${t.dataType}`);
  return t;
}

function toOrtTensor(ort, t) {
  const [type, Arr] = TYPES[t.dataType];
  const copy = Buffer.from(t.raw || Buffer.alloc(0));  // aligned, owned bytes
  const data = new Arr(copy.buffer, copy.byteOffset, copy.length / Arr.BYTES_PER_ELEMENT);
  return new ort.Tensor(type, type === 'bool' ? Uint8Array.from(data) : data, t.dims);
}

function varint(v) {
  let x = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return Buffer.from(out);
}

function encodeTensor(tensor, name) {
  const code = CODES[tensor.type];
  if (!code) throw new Error(`ort_run: output ${name}: type ${tensor.type} not supported`);
  const data = tensor.data;
  const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const nameBytes = Buffer.from(name, 'utf8');
  const parts = [];
  for (const d of tensor.dims) parts.push(Buffer.from([0x08]), varint(d));
  parts.push(Buffer.from([0x10]), varint(code));
  parts.push(Buffer.from([0x42]), varint(nameBytes.length), nameBytes);
  parts.push(Buffer.from([0x4a]), varint(raw.length), raw);
  return Buffer.concat(parts);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt(args.ort);
  const session = await ort.InferenceSession.create(args.model, {
    intraOpNumThreads: args.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  session.inputNames.forEach((name, k) => {
    const file = path.join(args.inputs, `input_${k}.pb`);
    feeds[name] = toOrtTensor(ort, decodeTensor(fs.readFileSync(file), file));
  });
  const outputs = await session.run(feeds);
  if (args.write_outputs) {
    fs.mkdirSync(args.write_outputs, {recursive: true});
    session.outputNames.forEach((name, k) => {
      fs.writeFileSync(path.join(args.write_outputs, `output_${k}.pb`),
                       encodeTensor(outputs[name], name));
    });
  }
  const result = {name: args.name || args.model, threads: args.threads};
  if (args.runs > 0) {
    for (let i = 0; i < args.warmup; ++i) await session.run(feeds);
    const times = [];
    for (let i = 0; i < args.runs; ++i) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    Object.assign(result, {runs: args.runs, median_ms: median(times), min_ms: Math.min(...times)});
  }
  const text = JSON.stringify(result);
  if (args.json) fs.writeFileSync(args.json, text + '\n');
  console.log(text);
}

main().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
