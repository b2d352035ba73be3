#!/usr/bin/env node
// Checks the deployment files without a cluster or a Docker engine:
//   1. every YAML file under deploy/ and docker/ parses;
//   2. each kustomization (base, overlays/dev, overlays/prod) renders with `kubectl kustomize`
//      (or `kustomize build`) and has what the architecture asks for: a Deployment per app with
//      /healthz liveness and /readyz readiness probes, resources, the config and secret env, a PDB
//      for each, HPAs for gateway and ingest, a Service for the gateway;
//   3. docker/compose.yaml has every app with the §11 environment and a /healthz healthcheck.
// Usage: node deploy/validate.mjs   (exit code 1 on any problem)
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse } from 'yaml';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const APPS = ['gateway', 'ingest', 'ledger', 'redemption', 'referral', 'webhook'];
const AUTOSCALED = ['gateway', 'ingest'];
const ENV_KEYS = ['PORT', 'DATABASE_URL', 'EVENT_STORE', 'EVENTSTORE_URL', 'KAFKA_BROKERS', 'REDIS_URL', 'LOYALTY_ADMIN_TOKEN'];
const problems = [];
const fail = (where, what) => problems.push(`${where}: ${what}`);

// 1. syntax ----------------------------------------------------------------------------------------
const yamlFiles = (dir) => readdirSync(dir).flatMap((name) => {
  const p = join(dir, name);
  if (statSync(p).isDirectory()) return yamlFiles(p);
  return /\.ya?ml$/.test(name) ? [p] : [];
});
const files = [...yamlFiles(join(root, 'deploy')), ...yamlFiles(join(root, 'docker'))];
for (const file of files) {
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    for (const e of doc.errors) fail(relative(root, file), `YAML error: ${e.message}`);
  }
}
console.log(`yaml: ${files.length} files parsed`);

// 2. kustomizations ---------------------------------------------------------------------------------
const render = (dir) => {
  const attempts = [['kubectl', ['kustomize', dir]], ['kustomize', ['build', dir]]];
  for (const [cmd, args] of attempts) {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      if (e.code === 'ENOENT') continue;
      fail(relative(root, dir), `${cmd} ${args.join(' ')} failed: ${String(e.stderr || e.message).trim()}`);
      return undefined;
    }
  }
  return null;
};

const labelsMatch = (selector, labels) => Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

const checkRendered = (name, text, { externalSecret }) => {
  const docs = parseAllDocuments(text).map((d) => d.toJSON()).filter(Boolean);
  const of = (kind) => docs.filter((d) => d.kind === kind);
  const deployments = of('Deployment').filter((d) => d.metadata?.labels?.['app.kubernetes.io/part-of'] === 'loyalty');
  const configMaps = new Set(of('ConfigMap').map((d) => d.metadata.name));
  const secrets = new Set(of('Secret').map((d) => d.metadata.name));
  for (const app of APPS) {
    const d = deployments.find((x) => x.metadata.name === `loyalty-${app}`);
    if (!d) { fail(name, `no Deployment loyalty-${app}`); continue; }
    const where = `${name} Deployment/${d.metadata.name}`;
    if (!labelsMatch(d.spec.selector?.matchLabels, d.spec.template?.metadata?.labels)) fail(where, 'selector does not match the pod labels');
    const c = d.spec.template.spec.containers?.[0];
    if (!c) { fail(where, 'no container'); continue; }
    if (c.livenessProbe?.httpGet?.path !== '/healthz') fail(where, 'liveness probe is not GET /healthz');
    if (c.readinessProbe?.httpGet?.path !== '/readyz') fail(where, 'readiness probe is not GET /readyz');
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory || !c.resources?.limits?.memory) fail(where, 'needs cpu/memory requests and a memory limit');
    if (!c.ports?.some((p) => p.name === 'http' && p.containerPort === 3000)) fail(where, 'no http port 3000');
    const cm = c.envFrom?.find((e) => e.configMapRef)?.configMapRef?.name;
    const secret = c.envFrom?.find((e) => e.secretRef)?.secretRef?.name;
    if (!cm || !configMaps.has(cm)) fail(where, `envFrom ConfigMap ${cm ?? '(none)'} is not in the output`);
    if (!secret) fail(where, 'no envFrom Secret');
    else if (!externalSecret && !secrets.has(secret)) fail(where, `envFrom Secret ${secret} is not in the output`);
    if (!c.image?.includes(`loyalty-${app}`)) fail(where, `image ${c.image} is not loyalty-${app}`);
    if (d.spec.template.spec.securityContext?.runAsNonRoot !== true) fail(where, 'pods must run as non-root');
    const pdb = of('PodDisruptionBudget').find((p) => labelsMatch(p.spec.selector?.matchLabels, d.spec.template.metadata.labels));
    if (!pdb) fail(where, 'no PodDisruptionBudget selects its pods');
    const hpa = of('HorizontalPodAutoscaler').find((h) => h.spec.scaleTargetRef?.name === d.metadata.name);
    if (AUTOSCALED.includes(app) && !hpa) fail(where, 'no HorizontalPodAutoscaler');
    if (hpa && hpa.spec.minReplicas > hpa.spec.maxReplicas) fail(where, 'HPA minReplicas > maxReplicas');
  }
  const gw = deployments.find((x) => x.metadata.name === 'loyalty-gateway');
  if (gw && !of('Service').some((s) => labelsMatch(s.spec.selector, gw.spec.template.metadata.labels) && s.spec.ports?.some((p) => p.targetPort === 'http'))) {
    fail(name, 'no Service selects the gateway pods on port http');
  }
  console.log(`${name}: ${docs.length} objects (${deployments.length} app Deployments)`);
};

const kustomizations = [['deploy/base', { externalSecret: true }], ['deploy/overlays/dev', { externalSecret: false }], ['deploy/overlays/prod', { externalSecret: true }]];
for (const [dir, opts] of kustomizations) {
  const text = render(join(root, dir));
  if (text === null) { console.log(`${dir}: skipped (neither kubectl nor kustomize is installed)`); continue; }
  if (text !== undefined) checkRendered(dir, text, opts);
}

// 3. compose ----------------------------------------------------------------------------------------
const compose = parse(readFileSync(join(root, 'docker/compose.yaml'), 'utf8'), { merge: true });
for (const app of [...APPS, 'standalone']) {
  const s = compose.services?.[app];
  if (!s) { fail('docker/compose.yaml', `no service ${app}`); continue; }
  for (const k of ENV_KEYS) if (!(k in (s.environment ?? {}))) fail(`docker/compose.yaml ${app}`, `environment lacks ${k}`);
  if (!JSON.stringify(s.healthcheck?.test ?? '').includes('/healthz')) fail(`docker/compose.yaml ${app}`, 'healthcheck does not call /healthz');
  if (s.build?.args?.APP !== app) fail(`docker/compose.yaml ${app}`, `build arg APP is ${s.build?.args?.APP}`);
}
for (const infra of ['postgres', 'kafka', 'eventstore', 'redis']) {
  if (!compose.services?.[infra]?.healthcheck) fail('docker/compose.yaml', `no healthy ${infra} service`);
}
console.log(`compose: ${Object.keys(compose.services ?? {}).length} services`);

if (problems.length) {
  console.error(`\n${problems.length} problem(s):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}
console.log('deploy: all checks passed');
