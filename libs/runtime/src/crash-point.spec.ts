import { crashPoint } from './crash-point';

describe('crashPoint (test-only crash hook)', () => {
  const saved = process.env.LOYALTY_CRASH_POINT;
  let kill: jest.SpyInstance;
  let stdout: jest.SpyInstance;

  beforeEach(() => {
    kill = jest.spyOn(process, 'kill').mockImplementation(() => true);
    stdout = jest.spyOn(process.stdout, 'write').mockImplementation(() => true); // the JSON log line
  });
  afterEach(() => {
    kill.mockRestore();
    stdout.mockRestore();
    if (saved === undefined) delete process.env.LOYALTY_CRASH_POINT;
    else process.env.LOYALTY_CRASH_POINT = saved;
  });

  it('is inert when LOYALTY_CRASH_POINT is unset or names other points', () => {
    delete process.env.LOYALTY_CRASH_POINT;
    crashPoint('a:after-append');
    process.env.LOYALTY_CRASH_POINT = 'b:after-append, a:after-append-not';
    crashPoint('a:after-append');
    crashPoint('a');
    expect(kill).not.toHaveBeenCalled();
  });

  it('kills its own process with SIGKILL the first time a named point is passed', () => {
    process.env.LOYALTY_CRASH_POINT = 'other,c:after-append';
    crashPoint('c:after-append');
    expect(kill).toHaveBeenCalledTimes(1);
    expect(kill).toHaveBeenCalledWith(process.pid, 'SIGKILL');
    expect(stdout).toHaveBeenCalledWith(expect.stringContaining('"msg":"crash point c:after-append reached'));
  });

  it('with @n, kills at the n-th pass only', () => {
    process.env.LOYALTY_CRASH_POINT = 'd:after-append@3';
    crashPoint('d:after-append');
    crashPoint('d:after-append');
    expect(kill).not.toHaveBeenCalled();
    crashPoint('d:after-append');
    expect(kill).toHaveBeenCalledTimes(1);
    crashPoint('d:after-append');
    expect(kill).toHaveBeenCalledTimes(1);
  });
});
