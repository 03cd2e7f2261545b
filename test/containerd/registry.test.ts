/**
 * The test registry (test/support/registry.ts) behind the private containerd (harness.ts): the
 * ground the private-image tests stand on. containerd is told the registry's CA through a
 * hosts.toml added while it runs, never its credentials, so that:
 *   - without that file containerd does not reach it over TLS; with it, a running containerd does;
 *   - an anonymous CRI PullImage is refused with the registry's answer;
 *   - a PullImage whose AuthConfig has the user and password pulls, and the image then lists in
 *     CRI ListImages under its name.
 * And the registry's login as a Docker config.json (what a dockerconfigjson Secret holds) is
 * accepted by a registry client, crane, whose anonymous request is refused.
 * The authenticated pull is a PullImage request of our own over gRPC with the proto's `auth`
 * field (src/runtime/cri/api.proto), so this file tests the infrastructure, not the agent's
 * credential handling.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { afterAll, describe, expect, it } from 'vitest';
import { CriClient } from '../../src/runtime/cri/client.ts';
import { PRIVATE_BUSYBOX, startRegistry, type Registry } from '../support/registry.ts';
import { BUSYBOX_IMAGE, startContainerd, type ContainerdInstance } from './harness.ts';

// Started while the file is collected, so that a skip is decided before any test is declared.
const containerd = await startContainerd();
const registry = containerd ? await startRegistry() : null;

const SUITE = 'test registry with authentication behind the private containerd';

if (containerd === null || registry === null) {
  await containerd?.stop();
  // startContainerd() or startRegistry() has printed why; keep the skip visible in the report too.
  describe.skip(SUITE, () => {
    it('needs root, the containerd packages and Go (see the SKIPPING message)', () => {});
  });
} else {
  describe(SUITE, { timeout: 120_000 }, () => suite(containerd, registry));
}

interface AuthConfig {
  username?: string;
  password?: string;
}

/** PullImage with an AuthConfig, straight on the wire: what the agent's client sends is not under test here. */
function pullWithAuth(endpoint: string, image: string, auth: AuthConfig): Promise<string> {
  const protoPath = fileURLToPath(new URL('../../src/runtime/cri/api.proto', import.meta.url));
  const definition = protoLoader.loadSync(path.resolve(protoPath), { keepCase: false, longs: Number, enums: String, defaults: true });
  const api = grpc.loadPackageDefinition(definition) as unknown as {
    runtime: { v1: { ImageService: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client } };
  };
  const client = new api.runtime.v1.ImageService(endpoint, grpc.credentials.createInsecure()) as grpc.Client & {
    pullImage(request: object, options: grpc.CallOptions, callback: (err: grpc.ServiceError | null, response?: { imageRef: string }) => void): void;
  };
  return new Promise<string>((resolve, reject) => {
    client.pullImage({ image: { image }, auth }, { deadline: Date.now() + 60_000 }, (err, response) => {
      client.close();
      if (err) reject(err);
      else resolve(response!.imageRef);
    });
  });
}

function suite(containerd: ContainerdInstance, registry: Registry): void {
  const cri = new CriClient(containerd.endpoint, { requestTimeoutMs: 60_000 });
  const image = `${registry.host}/${PRIVATE_BUSYBOX}`;
  let pushed = '';

  afterAll(async () => {
    cri.close();
    await registry.stop();
    await containerd.stop();
  });

  /**
   * containerd 1.6.20's words for a refused resolve (remotes/docker/resolver.go: the manifest
   * request's status, after the authorizer had nothing, or nothing accepted, to answer the
   * challenge with), wrapped by the CRI plugin's PullImage (pkg/cri/server/image_pull.go).
   */
  const refused = (status: string): string =>
    `failed to pull and unpack image "${image}": failed to resolve reference "${image}": pulling from host ${registry.host} failed with status code [manifests 1]: ${status}`;

  it('takes the pushed image', async () => {
    pushed = await registry.pushBusybox();
    expect(pushed).toMatch(new RegExp(`^${registry.host.replace(/\./g, '\\.')}/private/busybox@sha256:[0-9a-f]{64}$`));
  });

  it('gives its login as a Docker config.json that a registry client accepts, and serves nothing without it', async () => {
    const config = await mkdtemp(path.join(tmpdir(), 'statelet-docker-config-'));
    try {
      await expect(registry.crane(['digest', image], config)).rejects.toThrow(/UNAUTHORIZED/);
      await writeFile(path.join(config, 'config.json'), registry.dockerConfigJson());
      const digest = (await registry.crane(['digest', image], config)).trim();
      expect(pushed).toBe(`${registry.host}/private/busybox@${digest}`);
    } finally {
      await rm(config, { recursive: true, force: true });
    }
  });

  it('is reached over HTTPS by a running containerd once its hosts.toml is written, without a restart', async () => {
    const credentials = { username: registry.username, password: registry.password };
    // Without a hosts.toml containerd speaks plain HTTP to a loopback registry, which the TLS
    // listener answers with 400 (net/http: "Client sent an HTTP request to an HTTPS server").
    await expect(pullWithAuth(containerd.endpoint, image, credentials)).rejects.toThrow(refused('400 Bad Request'));
    await containerd.trustRegistry(registry.host, registry.caFile);
    // Now over TLS to the registry's own CA: the anonymous pull below gets the registry's 401.
  });

  it('refuses an anonymous pull with the registry’s 401', async () => {
    await expect(cri.pullImage(image)).rejects.toThrow(refused('401 Unauthorized'));
    const images = await cri.listImages();
    expect(images.flatMap((i) => i.repoTags)).not.toContain(image);
  });

  it('refuses a pull with a wrong password', async () => {
    await expect(pullWithAuth(containerd.endpoint, image, { username: registry.username, password: `${registry.password}-wrong` })).rejects.toThrow(refused('401 Unauthorized'));
  });

  it('pulls with the user and password in PullImage’s AuthConfig, and the image lists in ListImages', async () => {
    const ref = await pullWithAuth(containerd.endpoint, image, { username: registry.username, password: registry.password });
    expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    const images = await cri.listImages();
    const pulled = images.find((i) => i.repoTags.includes(image));
    expect(pulled, `${image} not in ListImages: ${JSON.stringify(images.map((i) => i.repoTags))}`).toBeDefined();
    expect(pulled!.id).toBe(ref);
    expect(pulled!.repoDigests).toContain(pushed);
    // An image of its own, not a second name of the busybox every other test uses.
    const busybox = images.find((i) => i.repoTags.includes(BUSYBOX_IMAGE));
    expect(pulled!.id).not.toBe(busybox?.id);
  });
}
