import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * deploy/validate.mjs (issue 11): passes on the repository's manifests, and fails, naming the
 * problem, on copies broken the ways that matter (so its checks are not vacuous).
 */
const root = join(__dirname, '..', '..');
/** The renders need kubectl (or kustomize); without one these tests fail, saying so, rather than skip. */
const requireKubectl = () => {
  try { execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' }); } catch { throw new Error('kubectl is needed to render the kustomizations'); }
};

const runIn = (dir: string) => spawnSync(process.execPath, [join(dir, 'deploy', 'validate.mjs')], { encoding: 'utf8', env: { ...process.env, VALIDATE_TODAY: '2026-11-26' } });

describe('deploy/validate.mjs', () => {
  let copy: string;
  beforeEach(() => {
    requireKubectl();
    copy = mkdtempSync(join(tmpdir(), 'validate-'));
    cpSync(join(root, 'deploy'), join(copy, 'deploy'), { recursive: true });
    cpSync(join(root, 'docker'), join(copy, 'docker'), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
  });
  afterEach(() => rmSync(copy, { recursive: true, force: true }));

  const edit = (file: string, from: string | RegExp, to: string) => {
    const p = join(copy, file);
    const text = readFileSync(p, 'utf8');
    const next = text.replace(from, to);
    expect(next).not.toBe(text);
    writeFileSync(p, next);
  };

  it('passes on the repository', () => {
    const r = runIn(root);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('deploy: all checks passed');
    expect(r.stdout).toMatch(/docker: node:\d+-\S+-slim/);
  });

  it('fails on an image that is not the current Node.js LTS', () => {
    edit('docker/Dockerfile', /ARG NODE_IMAGE=node:\S+/, 'ARG NODE_IMAGE=node:20-bookworm-slim');
    const r = runIn(copy);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('Node.js 20 reached end of life');
  });

  it('fails when the public Ingress serves the admin plane, metrics or docs', () => {
    edit('deploy/overlays/prod/ingress.yaml', '          - path: /v1\n', '          - path: /\n');
    const r = runIn(copy);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('public Ingress routes /admin/v1/programs');
    expect(r.stderr).toContain('public Ingress routes /metrics');
  });

  it('fails when the webhook sender may reach the cloud metadata range, or a service the internet', () => {
    edit('deploy/base/network/networkpolicies.yaml', /\n\s+- 169\.254\.0\.0\/16[^\n]*/, '');
    edit('deploy/base/network/networkpolicies.yaml', 'app.kubernetes.io/name: loyalty-webhook\n  policyTypes: [Egress]', 'app.kubernetes.io/part-of: loyalty\n  policyTypes: [Egress]');
    const r = runIn(copy);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('internet egress does not exclude 169.254.0.0/16');
    expect(r.stderr).toMatch(/NetworkPolicy for loyalty-ledger: egress beyond the cluster/);
  });

  it('fails without KEDA fallback, rebuild template suspension or the pods waiting for the migration Job', () => {
    edit('deploy/components/keda/scaledobjects.yaml', /  fallback:\n    failureThreshold: 4\n    replicas: 4\n/, '');
    edit('deploy/base/jobs/rebuild-cronjob.yaml', '  suspend: true\n', '');
    edit('deploy/base/config.env', 'LOYALTY_MIGRATIONS=check', 'LOYALTY_MIGRATIONS=run');
    const r = runIn(copy);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('ScaledObject/loyalty-ingest: no fallback replicas');
    expect(r.stderr).toContain('the rebuild CronJob must be suspended');
    expect(r.stderr).toContain('must set LOYALTY_MIGRATIONS=check');
  });
});
