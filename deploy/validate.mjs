#!/usr/bin/env node
// Checks the deployment files without a cluster or a Docker engine:
//   1. every YAML file under deploy/ and docker/ parses;
//   2. each kustomization (base, overlays/dev, overlays/prod) renders with `kubectl kustomize`
//      (or `kustomize build`) and has what the architecture asks for: a Deployment per app with
//      /healthz liveness and /readyz readiness probes, resources, the config and secret env, a PDB
//      for each, HPAs for gateway and ingest, a Service for the gateway;
//   3. docker/compose.yaml has every app with the §11 environment and a /healthz healthcheck;
//   4. (issue 11) ingest and ledger autoscale: a CPU HPA everywhere, and in prod KEDA ScaledObjects
//      on queue depth / consumer lag with a fallback and no second HPA; a ServiceMonitor reaching
//      every app's /metrics; NetworkPolicies (default deny, only the gateway reachable from outside,
//      internet egress for the webhook sender only and never to private or metadata addresses);
//      the public Ingress serves no /admin/v1, /metrics or /docs; the migration Job and the rebuild
//      Job template run the right tools as non-root; the Dockerfile uses the current Node LTS.
// Usage: node deploy/validate.mjs   (exit code 1 on any problem)
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, parse } from 'yaml';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const APPS = ['gateway', 'ingest', 'ledger', 'redemption', 'referral', 'webhook'];
const AUTOSCALED = ['gateway', 'ingest', 'ledger'];
const KEDA_SCALED = { ingest: 'prometheus', ledger: 'kafka' };
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
    const pdb = of('PodDisruptionBudget').find((p) => labelsMatch(p.spec.selector?.matchLabels, d.spec.template.metadata.labels));
    if (!pdb) fail(where, 'no PodDisruptionBudget selects its pods');
    const hpas = of('HorizontalPodAutoscaler').filter((h) => h.spec.scaleTargetRef?.name === d.metadata.name);
    const scaled = of('ScaledObject').filter((o) => o.spec.scaleTargetRef?.name === d.metadata.name);
    if (hpas.length + scaled.length > 1) fail(where, `${hpas.length + scaled.length} autoscalers target it (HPA and ScaledObject fight)`);
    if (AUTOSCALED.includes(app) && !hpas.length && !scaled.length) fail(where, 'no HorizontalPodAutoscaler or ScaledObject');
    if (AUTOSCALED.includes(app) && d.spec.replicas !== undefined && !name.endsWith('dev')) fail(where, 'replicas set although an autoscaler owns them');
    for (const h of hpas) if (h.spec.minReplicas > h.spec.maxReplicas) fail(where, 'HPA minReplicas > maxReplicas');
    for (const o of scaled) checkScaledObject(where, app, o);
    if (!of('Service').some((s) => labelsMatch(s.spec.selector, d.spec.template.metadata.labels) && s.spec.ports?.some((p) => p.name === 'http' && p.targetPort === 'http'))) {
      fail(where, 'no Service names its http port (the ServiceMonitor scrapes through Services)');
    }
    checkPodSecurity(where, d.spec.template.spec);
  }
  const gw = deployments.find((x) => x.metadata.name === 'loyalty-gateway');
  if (gw && !of('Service').some((s) => labelsMatch(s.spec.selector, gw.spec.template.metadata.labels) && s.spec.ports?.some((p) => p.targetPort === 'http'))) {
    fail(name, 'no Service selects the gateway pods on port http');
  }
  if (name.endsWith('prod')) {
    for (const app of Object.keys(KEDA_SCALED)) {
      if (!of('ScaledObject').some((o) => o.spec.scaleTargetRef?.name === `loyalty-${app}`)) fail(name, `no KEDA ScaledObject for loyalty-${app}`);
    }
    checkServiceMonitor(name, of, deployments);
    checkIngresses(name, of('Ingress'));
  }
  checkNetworkPolicies(name, of('NetworkPolicy'), deployments);
  checkJobs(name, of);
  const config = of('ConfigMap').find((c) => c.metadata.name.startsWith('loyalty-config'));
  if (config?.data?.LOYALTY_MIGRATIONS !== 'check') fail(name, 'loyalty-config must set LOYALTY_MIGRATIONS=check (the migration Job migrates; pods wait for it)');
  console.log(`${name}: ${docs.length} objects (${deployments.length} app Deployments)`);
};

// 4. issue 11 ------------------------------------------------------------------------------------------
function checkPodSecurity(where, podSpec) {
  if (podSpec.securityContext?.runAsNonRoot !== true) fail(where, 'pods must run as non-root');
  for (const c of podSpec.containers ?? []) {
    if (c.securityContext?.allowPrivilegeEscalation !== false) fail(where, `container ${c.name} may escalate privileges`);
    if (c.securityContext?.readOnlyRootFilesystem !== true) fail(where, `container ${c.name} has a writable root filesystem`);
    if (!(c.securityContext?.capabilities?.drop ?? []).includes('ALL')) fail(where, `container ${c.name} keeps Linux capabilities`);
  }
}

function checkScaledObject(where, app, o) {
  const w = `${where} ScaledObject/${o.metadata.name}`;
  const kind = KEDA_SCALED[app];
  const main = o.spec.triggers?.find((t) => t.type === kind);
  if (!kind || !main) { fail(w, `expected a ${kind ?? '(no KEDA for this app)'} trigger`); return; }
  if (kind === 'prometheus' && !/loyalty_ingest_queue_depth/.test(main.metadata?.query ?? '')) fail(w, 'the prometheus trigger does not read loyalty_ingest_queue_depth');
  if (kind === 'kafka' && main.metadata?.consumerGroup !== `loyalty-${app}`) fail(w, `the kafka trigger does not read consumer group loyalty-${app}`);
  if (kind === 'kafka' && !main.metadata?.bootstrapServers) fail(w, 'the kafka trigger has no bootstrapServers');
  if (!o.spec.triggers.some((t) => t.type === 'cpu')) fail(w, 'no cpu trigger (the HPA it replaces scaled on CPU)');
  if (!(o.spec.fallback?.replicas > 0) || !(o.spec.fallback?.failureThreshold > 0)) fail(w, 'no fallback replicas for when the metric source fails');
  if (!(o.spec.minReplicaCount >= 1)) fail(w, 'minReplicaCount must be at least 1 (the service never scales to zero)');
  if (o.spec.minReplicaCount > o.spec.maxReplicaCount) fail(w, 'minReplicaCount > maxReplicaCount');
  if (o.spec.fallback && (o.spec.fallback.replicas < o.spec.minReplicaCount || o.spec.fallback.replicas > o.spec.maxReplicaCount)) fail(w, 'fallback replicas outside min..max');
}

function checkServiceMonitor(name, of, deployments) {
  const monitors = of('ServiceMonitor');
  if (!monitors.length) { fail(name, 'no ServiceMonitor'); return; }
  for (const d of deployments) {
    const app = d.metadata.name;
    const services = of('Service').filter((s) => labelsMatch(s.spec.selector, d.spec.template.metadata.labels));
    const scraped = monitors.some((m) => m.spec.endpoints?.some((e) => e.port === 'http' && (e.path ?? '/metrics') === '/metrics')
      && services.some((s) => selectorMatches(m.spec.selector, s.metadata.labels) && s.spec.ports?.some((p) => p.name === 'http')));
    if (!scraped) fail(name, `no ServiceMonitor scrapes ${app} on port http /metrics`);
  }
}

function selectorMatches(selector, labels = {}) {
  if (!selector) return false;
  if (!labelsMatch(selector.matchLabels, labels)) return false;
  return (selector.matchExpressions ?? []).every((e) => {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    switch (e.operator) {
      case 'In': return has && e.values.includes(labels[e.key]);
      case 'NotIn': return !has || !e.values.includes(labels[e.key]);
      case 'Exists': return has;
      case 'DoesNotExist': return !has;
      default: return false;
    }
  });
}

const HIDDEN = ['/admin/v1/programs', '/metrics', '/docs', '/docs/', '/openapi.json', '/healthz', '/readyz'];
const routes = (rule, path) => (rule.http?.paths ?? []).some((p) => {
  const pathType = p.pathType ?? 'Prefix';
  if (pathType === 'Exact') return p.path === path;
  const prefix = p.path.replace(/\/+$/, '');
  return prefix === '' || path === prefix || path.startsWith(`${prefix}/`);
});

function checkIngresses(name, ingresses) {
  const publicOnes = ingresses.filter((i) => i.metadata.labels?.['loyalty.example.com/exposure'] !== 'internal');
  const internal = ingresses.filter((i) => i.metadata.labels?.['loyalty.example.com/exposure'] === 'internal');
  if (!publicOnes.length) fail(name, 'no public Ingress');
  for (const i of publicOnes) {
    for (const rule of i.spec.rules ?? []) {
      for (const path of HIDDEN) if (routes(rule, path)) fail(`${name} Ingress/${i.metadata.name}`, `public Ingress routes ${path}`);
      if (!routes(rule, '/v1/members')) fail(`${name} Ingress/${i.metadata.name}`, 'public Ingress does not route /v1');
    }
    if (i.spec.defaultBackend) fail(`${name} Ingress/${i.metadata.name}`, 'a defaultBackend would expose every path');
  }
  if (!internal.some((i) => (i.spec.rules ?? []).some((r) => routes(r, '/admin/v1/programs')))) fail(name, 'no internal Ingress routes /admin/v1');
  const classes = new Set(internal.map((i) => i.spec.ingressClassName));
  for (const i of publicOnes) if (classes.has(i.spec.ingressClassName)) fail(`${name} Ingress/${i.metadata.name}`, 'public and internal Ingresses share an ingress class');
}

// A small model of NetworkPolicy semantics: which policies select a pod, and what they allow.
const PRIVATE_V4 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '127.0.0.0/8'];
function checkNetworkPolicies(name, policies, deployments) {
  if (!policies.length) { fail(name, 'no NetworkPolicy'); return; }
  const selecting = (labels, type) => policies.filter((p) => selectorMatches(p.spec.podSelector, labels) || (Object.keys(p.spec.podSelector ?? {}).length === 0))
    .filter((p) => (p.spec.policyTypes ?? ['Ingress']).includes(type));
  for (const d of deployments) {
    const labels = d.spec.template.metadata.labels;
    const app = d.metadata.name.replace(/^loyalty-/, '');
    const where = `${name} NetworkPolicy for ${d.metadata.name}`;
    const inPolicies = selecting(labels, 'Ingress');
    const outPolicies = selecting(labels, 'Egress');
    if (!inPolicies.length) fail(where, 'no ingress policy selects it (all traffic allowed)');
    if (!outPolicies.length) fail(where, 'no egress policy selects it (all traffic allowed)');
    const ingressRules = inPolicies.flatMap((p) => p.spec.ingress ?? []);
    for (const r of ingressRules) {
      if (!r.from?.length) fail(where, 'an ingress rule allows every source');
      for (const f of r.from ?? []) {
        if (f.ipBlock) fail(where, `ingress from ipBlock ${f.ipBlock.cidr}`);
        const ns = f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'];
        if (f.namespaceSelector && !ns) fail(where, 'ingress from every namespace');
        if (ns && ns !== 'monitoring' && app !== 'gateway') fail(where, `ingress from namespace ${ns}: only the gateway is reachable from outside`);
      }
    }
    if (app === 'gateway' && !ingressRules.some((r) => r.from?.some((f) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'ingress-nginx'))) {
      fail(where, 'the ingress controller cannot reach the gateway');
    }
    const egressRules = outPolicies.flatMap((p) => p.spec.egress ?? []);
    const internet = egressRules.flatMap((r) => (r.to ?? [{}]).map((t) => ({ t, r }))).filter(({ t }) => !t.namespaceSelector && !t.podSelector);
    if (app === 'webhook') {
      const v4 = internet.find(({ t }) => t.ipBlock?.cidr === '0.0.0.0/0');
      if (!v4) fail(where, 'the webhook sender cannot reach the internet');
      else for (const cidr of PRIVATE_V4) if (!(v4.t.ipBlock.except ?? []).includes(cidr)) fail(where, `internet egress does not exclude ${cidr}`);
      const v6 = internet.find(({ t }) => t.ipBlock?.cidr === '::/0');
      if (v6) for (const cidr of ['fc00::/7', 'fe80::/10', '::1/128']) if (!(v6.t.ipBlock.except ?? []).includes(cidr)) fail(where, `internet egress does not exclude ${cidr}`);
      for (const { t } of internet) if (t.ipBlock && !['0.0.0.0/0', '::/0'].includes(t.ipBlock.cidr)) fail(where, `unexpected egress to ${t.ipBlock.cidr}`);
    } else if (internet.length) {
      fail(where, `egress beyond the cluster (${internet.map(({ t }) => t.ipBlock?.cidr ?? 'anywhere').join(', ')}): only the webhook sender may`);
    }
    const dataPorts = new Set(egressRules.filter((r) => r.to?.some((t) => t.namespaceSelector)).flatMap((r) => (r.ports ?? []).map((p) => p.port)));
    for (const port of [5432, 9092]) if (!dataPorts.has(port)) fail(where, `no egress to port ${port}`);
    if (!egressRules.some((r) => r.ports?.some((p) => p.port === 53))) fail(where, 'no DNS egress');
  }
}

function checkJobs(name, of) {
  const pods = [
    ...of('Job').map((j) => ({ kind: 'Job', o: j, spec: j.spec.template.spec, labels: j.spec.template.metadata?.labels })),
    ...of('CronJob').map((j) => ({ kind: 'CronJob', o: j, spec: j.spec.jobTemplate.spec.template.spec, labels: j.spec.jobTemplate.spec.template.metadata?.labels })),
  ];
  const tool = (p) => (p.spec.containers?.[0]?.command ?? []).join(' ');
  const migrate = pods.find((p) => p.kind === 'Job' && tool(p).includes('dist/tools/migrate/main.js'));
  const rebuild = pods.find((p) => tool(p).includes('dist/tools/rebuild/main.js'));
  if (!migrate) fail(name, 'no Job runs the migrations (dist/tools/migrate/main.js)');
  if (!rebuild) fail(name, 'no Job (or suspended Job template) runs the projection rebuild (dist/tools/rebuild/main.js)');
  if (rebuild?.kind === 'CronJob' && rebuild.o.spec.suspend !== true) fail(name, 'the rebuild CronJob must be suspended: it is a template, started by hand');
  for (const p of [migrate, rebuild].filter(Boolean)) {
    const where = `${name} ${p.kind}/${p.o.metadata.name}`;
    const c = p.spec.containers[0];
    if (!['Never', 'OnFailure'].includes(p.spec.restartPolicy)) fail(where, 'restartPolicy must be Never or OnFailure');
    if (!/loyalty-/.test(c.image ?? '')) fail(where, `image ${c.image} is not a loyalty image`);
    if (!c.envFrom?.some((e) => e.configMapRef) || !c.envFrom?.some((e) => e.secretRef)) fail(where, 'needs the config and the secret (DATABASE_URL)');
    if (!c.resources?.limits?.memory) fail(where, 'no memory limit');
    if (p.labels?.['app.kubernetes.io/part-of'] !== 'loyalty') fail(where, 'pods lack app.kubernetes.io/part-of=loyalty (the NetworkPolicies would not let them reach PostgreSQL)');
    checkPodSecurity(where, p.spec);
  }
}

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

// 5. Node.js LTS image --------------------------------------------------------------------------------
// LTS lines: [major, LTS from, end of life] (nodejs.org release schedule). Extend when a line enters LTS.
const NODE_LTS = [[20, '2023-10-24', '2026-04-30'], [22, '2024-10-29', '2027-04-30'], [24, '2025-10-28', '2028-04-30'], [26, '2026-10-20', '2029-04-30']];
{
  const dockerfile = readFileSync(join(root, 'docker/Dockerfile'), 'utf8');
  const image = /^ARG NODE_IMAGE=(\S+)/m.exec(dockerfile)?.[1] ?? '';
  const major = Number(/^node:(\d+)/.exec(image)?.[1]);
  const today = process.env.VALIDATE_TODAY ?? new Date().toISOString().slice(0, 10);
  const line = NODE_LTS.find(([m]) => m === major);
  const current = NODE_LTS.filter(([, from, eol]) => from <= today && today < eol).at(-1);
  if (!line) fail('docker/Dockerfile', `NODE_IMAGE ${image || '(none)'} is not a Node.js LTS line`);
  else if (today >= line[2]) fail('docker/Dockerfile', `NODE_IMAGE ${image}: Node.js ${major} reached end of life on ${line[2]}`);
  else if (today < line[1]) fail('docker/Dockerfile', `NODE_IMAGE ${image}: Node.js ${major} is not LTS before ${line[1]}`);
  else if (current && current[0] !== major) fail('docker/Dockerfile', `NODE_IMAGE ${image}: the current LTS is Node.js ${current[0]}`);
  if (!/-slim$/.test(image)) fail('docker/Dockerfile', `NODE_IMAGE ${image} is not a slim image`);
  console.log(`docker: ${image} (current LTS ${current?.[0] ?? 'unknown'} on ${today})`);
}

if (problems.length) {
  console.error(`\n${problems.length} problem(s):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}
console.log('deploy: all checks passed');
