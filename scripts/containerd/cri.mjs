#!/usr/bin/env node
// The few CRI calls the containerd scripts need, over gRPC with the project's own proto
// (src/runtime/cri/api.proto). `ctr` talks to containerd's own API, not to the CRI plugin, so it
// cannot tell whether the CRI plugin is serving or whether its image store has caught up with an
// import; these checks go through the same door the agent uses.
//
//   cri.mjs wait-ready  ENDPOINT TIMEOUT_S           until Version answers
//   cri.mjs wait-images ENDPOINT TIMEOUT_S IMAGE...  until ImageStatus finds every image
//   cri.mjs cleanup     ENDPOINT                     stop and remove every container and sandbox
//
// ENDPOINT is unix:///path/to/containerd.sock. Exit status 0 on success, 1 on failure.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const here = path.dirname(fileURLToPath(import.meta.url));
const protoPath = path.resolve(here, '../../src/runtime/cri/api.proto');

const [command, endpoint, ...rest] = process.argv.slice(2);
if (!command || !endpoint) {
  console.error('usage: cri.mjs wait-ready|wait-images|cleanup ENDPOINT [TIMEOUT_S] [IMAGE...]');
  process.exit(2);
}

const definition = protoLoader.loadSync(protoPath, {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
});
const api = grpc.loadPackageDefinition(definition).runtime.v1;
const runtime = new api.RuntimeService(endpoint, grpc.credentials.createInsecure());
const images = new api.ImageService(endpoint, grpc.credentials.createInsecure());

/** One unary call with a deadline, as a promise. */
function call(client, method, request, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + timeoutMs }, (err, res) =>
      err ? reject(err) : resolve(res),
    );
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Retries `probe` until it returns true or the time is up; returns the last error text. */
async function until(timeoutS, what, probe) {
  const end = Date.now() + timeoutS * 1000;
  let last = 'no answer yet';
  for (;;) {
    try {
      if (await probe()) return;
      last = 'not there yet';
    } catch (err) {
      last = err?.details || err?.message || String(err);
    }
    if (Date.now() > end) throw new Error(`${what}: gave up after ${timeoutS}s (${last})`);
    await sleep(100);
  }
}

async function waitReady(timeoutS) {
  await until(timeoutS, 'CRI Version', async () => {
    const v = await call(runtime, 'version', { version: 'v1' }, 2_000);
    return v.runtimeApiVersion === 'v1';
  });
}

async function waitImages(timeoutS, names) {
  for (const name of names) {
    await until(timeoutS, `CRI ImageStatus ${name}`, async () => {
      const res = await call(images, 'imageStatus', { image: { image: name } }, 2_000);
      return Boolean(res.image?.id);
    });
  }
}

/** Best effort: every failure is reported, none stops the sweep. StopPodSandbox runs CNI DEL,
 * which is what releases the pod's IP and iptables rules; ctr alone would leak them. */
async function cleanup() {
  let failures = 0;
  const attempt = async (what, fn) => {
    try {
      await fn();
    } catch (err) {
      failures++;
      console.error(`cri cleanup: ${what}: ${err?.details || err?.message || err}`);
    }
  };
  const { containers } = await call(runtime, 'listContainers', {});
  for (const c of containers) {
    await attempt(`StopContainer ${c.id}`, () =>
      call(runtime, 'stopContainer', { containerId: c.id, timeout: 0 }, 30_000),
    );
    await attempt(`RemoveContainer ${c.id}`, () =>
      call(runtime, 'removeContainer', { containerId: c.id }, 30_000),
    );
  }
  const { items } = await call(runtime, 'listPodSandbox', {});
  for (const s of items) {
    await attempt(`StopPodSandbox ${s.id}`, () =>
      call(runtime, 'stopPodSandbox', { podSandboxId: s.id }, 30_000),
    );
    await attempt(`RemovePodSandbox ${s.id}`, () =>
      call(runtime, 'removePodSandbox', { podSandboxId: s.id }, 30_000),
    );
  }
  console.error(`cri cleanup: ${containers.length} container(s), ${items.length} sandbox(es)`);
  if (failures > 0) throw new Error(`${failures} cleanup call(s) failed`);
}

try {
  switch (command) {
    case 'wait-ready':
      await waitReady(Number(rest[0] ?? 30));
      break;
    case 'wait-images':
      await waitImages(Number(rest[0] ?? 30), rest.slice(1));
      break;
    case 'cleanup':
      await cleanup();
      break;
    default:
      throw new Error(`unknown command ${command}`);
  }
  process.exitCode = 0;
} catch (err) {
  console.error(`cri.mjs ${command}: ${err?.message || err}`);
  process.exitCode = 1;
} finally {
  runtime.close();
  images.close();
}
