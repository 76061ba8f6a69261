"""Fixed CPU-bound pure-Python work that times itself (bench/python_slowdown.sh).

  python3 pybench.py ROUNDS JOBS

Forks JOBS worker processes; each runs ROUNDS rounds of an n-body
simulation (the pyperformance nbody kernel, 5 bodies, 2000 steps a round)
reached through a few levels of Python calls:
<module> -> main -> worker -> bench_round -> simulate -> advance.
Prints one line when all workers have exited:

  wall_s=W cpu_s=C parent_cpu_s=P energy=E

W: wall time from the first fork to the last exit; C: the workers' user +
system CPU time (getrusage of the reaped children); P: the CPU time so far
of this process's parent (from /proc/PPID/stat; under `austin` that is
austin itself); E: the final energy of worker 0 (a checksum: the same for
every run with the same ROUNDS). Works on CPython 3.9-3.13.
"""
import os
import resource
import sys
import time

PI = 3.14159265358979323
SOLAR_MASS = 4 * PI * PI
DAYS_PER_YEAR = 365.24
STEPS = 2000


def initial_bodies():
    bodies = [
        # sun
        ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], SOLAR_MASS),
        # jupiter
        ([4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01],
         [1.66007664274403694e-03 * DAYS_PER_YEAR, 7.69901118419740425e-03 * DAYS_PER_YEAR,
          -6.90460016972063023e-05 * DAYS_PER_YEAR], 9.54791938424326609e-04 * SOLAR_MASS),
        # saturn
        ([8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01],
         [-2.76742510726862411e-03 * DAYS_PER_YEAR, 4.99852801234917238e-03 * DAYS_PER_YEAR,
          2.30417297573763929e-05 * DAYS_PER_YEAR], 2.85885980666130812e-04 * SOLAR_MASS),
        # uranus
        ([1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01],
         [2.96460137564761618e-03 * DAYS_PER_YEAR, 2.37847173959480950e-03 * DAYS_PER_YEAR,
          -2.96589568540237556e-05 * DAYS_PER_YEAR], 4.36624404335156298e-05 * SOLAR_MASS),
        # neptune
        ([1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01],
         [2.68067772490389322e-03 * DAYS_PER_YEAR, 1.62824170038242295e-03 * DAYS_PER_YEAR,
          -9.51592254519715870e-05 * DAYS_PER_YEAR], 5.15138902046611451e-05 * SOLAR_MASS),
    ]
    px = py = pz = 0.0
    for (r, v, m) in bodies:
        px -= v[0] * m
        py -= v[1] * m
        pz -= v[2] * m
    v = bodies[0][1]
    v[0], v[1], v[2] = px / SOLAR_MASS, py / SOLAR_MASS, pz / SOLAR_MASS
    return bodies


def pairs(bodies):
    return [(bodies[i], bodies[j]) for i in range(len(bodies) - 1)
            for j in range(i + 1, len(bodies))]


def advance(dt, bodies, body_pairs):
    for (([x1, y1, z1], v1, m1), ([x2, y2, z2], v2, m2)) in body_pairs:
        dx = x1 - x2
        dy = y1 - y2
        dz = z1 - z2
        mag = dt * ((dx * dx + dy * dy + dz * dz) ** (-1.5))
        b1m = m1 * mag
        b2m = m2 * mag
        v1[0] -= dx * b2m
        v1[1] -= dy * b2m
        v1[2] -= dz * b2m
        v2[0] += dx * b1m
        v2[1] += dy * b1m
        v2[2] += dz * b1m
    for (r, [vx, vy, vz], m) in bodies:
        r[0] += dt * vx
        r[1] += dt * vy
        r[2] += dt * vz


def energy(bodies, body_pairs):
    e = 0.0
    for (((x1, y1, z1), v1, m1), ((x2, y2, z2), v2, m2)) in body_pairs:
        dx = x1 - x2
        dy = y1 - y2
        dz = z1 - z2
        e -= (m1 * m2) / ((dx * dx + dy * dy + dz * dz) ** 0.5)
    for (r, [vx, vy, vz], m) in bodies:
        e += m * (vx * vx + vy * vy + vz * vz) / 2.
    return e


def simulate(bodies, body_pairs, steps):
    for _ in range(steps):
        advance(0.01, bodies, body_pairs)


def bench_round(bodies, body_pairs):
    simulate(bodies, body_pairs, STEPS)
    return energy(bodies, body_pairs)


def worker(rounds, out_fd):
    bodies = initial_bodies()
    body_pairs = pairs(bodies)
    e = 0.0
    for _ in range(rounds):
        e = bench_round(bodies, body_pairs)
    os.write(out_fd, ("%.9f\n" % e).encode())


def proc_cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return -1.0


def main(argv):
    rounds, jobs = int(argv[0]), int(argv[1])
    rfd, wfd = os.pipe()
    t0 = time.perf_counter()
    pids = []
    for _ in range(jobs):
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            try:
                worker(rounds, wfd)
            finally:
                os._exit(0)
        pids.append(pid)
    os.close(wfd)
    ok = True
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        ok = ok and status == 0
    wall = time.perf_counter() - t0
    with os.fdopen(rfd) as f:
        energies = f.read().split()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print("wall_s=%.3f cpu_s=%.3f parent_cpu_s=%.2f energy=%s" % (
        wall, ru.ru_utime + ru.ru_stime, proc_cpu_s(os.getppid()),
        energies[0] if energies else "?"))
    return 0 if ok and len(energies) == jobs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
