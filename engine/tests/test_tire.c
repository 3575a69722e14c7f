/* Unit tests of the tire model and solvers: free fall against the discrete
 * analytic trajectory of symplectic Euler, bit-identical state for 1..4
 * threads and both solvers, stability (no NaN, nothing below the floor,
 * bounded energy) from 4 to 10^6 masses, and the partition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tire/model.h"
#include "tire/solver.h"
#include "tire/team.h"

/* Run `steps` steps with k threads (not pinned, SCHED_OTHER); the checksum of
 * the final state goes to hex. */
static void simulate(int64_t n, double dt, int steps, tire_solver_kind kind, tire_lock_kind lock,
                     int k, char hex[17], tire_state *keep)
{
    tire_params p;
    tire_state st;
    CHECK(tire_params_init(&p, n, dt, 0.3, 0.2, 9.81) == 0, "params for n=%lld", (long long)n);
    CHECK(tire_state_init(&st, &p) == 0, "state for n=%lld", (long long)n);
    char err[512] = "";
    tire_solver *s = tire_solver_new(&st, kind, lock, k, err, sizeof err);
    CHECK(s != NULL, "solver: %s", err);
    int cpus[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    tire_team_cfg cfg = {.nthreads = k, .cpus = cpus, .policy = RTG_POL_OTHER};
    tire_team *tm = tire_team_start(s, &cfg, err, sizeof err);
    CHECK(tm != NULL, "team: %s", err);
    double cy;
    for (int i = 0; i < steps; i++)
        tire_team_step(tm, false, &cy);
    uint64_t nv = 0, niv = 0;
    tire_team_stop(tm, &nv, &niv);
    tire_checksum(&st, hex);
    tire_solver_free(s);
    if (keep)
        *keep = st;
    else
        tire_state_free(&st);
}

/* y_k = y_0 + dt * sum_{j=1..k} v_j with v_j = -g dt j: y_k = y_0 - g dt^2 k (k+1) / 2. */
static void test_free_fall(void)
{
    tire_params p;
    tire_state st;
    double dt = 0.01, g = 9.81, drop = 1.0;
    tire_params_init(&p, 8, dt, 0.3, drop, g);
    tire_state_init(&st, &p);
    double y0[8], x0[8];
    for (int i = 0; i < 8; i++)
        y0[i] = st.s[0].y[i], x0[i] = st.s[0].x[i];
    int checked = 0;
    for (int k = 1; k < 1000; k++) {
        int touch = tire_fast_part(&st, 0, 8, false, NULL);
        st.step++;
        if (touch)
            break;
        const tire_soa *s = tire_cur(&st);
        double fall = g * dt * dt * (double)k * (double)(k + 1) / 2.0;
        for (int i = 0; i < 8; i++) {
            double want = y0[i] - fall;
            CHECK(fabs(s->y[i] - want) <= 1e-9 * fmax(fabs(want), p.radius),
                  "step %d node %d: y %.17g, analytic %.17g", k, i, s->y[i], want);
            CHECK(fabs(s->vy[i] + g * dt * k) <= 1e-9 * g * dt * k, "step %d node %d: vy %.17g", k, i,
                  s->vy[i]);
            CHECK(fabs(s->x[i] - x0[i]) <= 1e-12, "step %d node %d: x moved to %.17g", k, i, s->x[i]);
        }
        checked++;
    }
    /* the lowest node reaches the floor at the first k with fall >= drop */
    int kc = 1;
    while (g * dt * dt * kc * (kc + 1) / 2.0 < drop)
        kc++;
    CHECK_EQ_I(checked, kc - 1);
    CHECK_EQ_I((int64_t)st.step, kc);
    tire_state_free(&st);
}

static void test_determinism(void)
{
    char ref[17], hex[17];
    simulate(1000, 0.01, 150, TIRE_SOLVER_LOCKED, TIRE_LOCK_MUTEX, 1, ref, NULL);
    for (int k = 1; k <= 4; k++) {
        simulate(1000, 0.01, 150, TIRE_SOLVER_FAST, TIRE_LOCK_MUTEX, k, hex, NULL);
        CHECK(strcmp(hex, ref) == 0, "fast, %d threads: %s != locked 1 thread %s", k, hex, ref);
        simulate(1000, 0.01, 150, TIRE_SOLVER_LOCKED, k % 2 ? TIRE_LOCK_SEM : TIRE_LOCK_SPIN, k, hex, NULL);
        CHECK(strcmp(hex, ref) == 0, "locked, %d threads: %s != %s", k, hex, ref);
    }
    /* the checksum does see a different state */
    simulate(1000, 0.01, 151, TIRE_SOLVER_FAST, TIRE_LOCK_MUTEX, 2, hex, NULL);
    CHECK(strcmp(hex, ref) != 0, "one more step gives the same checksum %s", hex);
}

static void check_sane(int64_t n, double dt, int steps)
{
    char hex[17];
    tire_state st;
    simulate(n, dt, steps, TIRE_SOLVER_FAST, TIRE_LOCK_MUTEX, 2, hex, &st);
    tire_state init;
    tire_state_init(&init, &st.p);
    double e0 = tire_energy(&init), e = tire_energy(&st);
    tire_state_free(&init);
    int64_t bad, below;
    tire_scan(&st, &bad, &below);
    CHECK_EQ_I(bad, 0);
    CHECK_EQ_I(below, 0);
    CHECK(isfinite(e) && e >= 0 && e <= 1.05 * e0, "n=%lld dt=%g: energy %g J after %d steps, %g J at start",
          (long long)n, dt, e, steps, e0);
    tire_state_free(&st);
}

static void test_stability(void)
{
    int64_t sizes[] = {4, 8, 12, 40, 400, 4000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        check_sane(sizes[i], 0.01, 6000);     /* 60 s at the default step */
        check_sane(sizes[i], 0.0005, 4000);   /* 2 s at the pretest step: past the impact */
    }
    check_sane(100000, 0.01, 300);
    check_sane(1000000, 0.01, 25);            /* through the impact at t = 0.2 s */
}

static void test_ranges(void)
{
    int64_t n = 1001 * 4;
    for (int k = 1; k <= 7; k++) {
        int64_t prev = 0;
        for (int t = 0; t < k; t++) {
            int64_t a, b;
            tire_range(n, k, t, &a, &b);
            CHECK_EQ_I(a, prev);
            CHECK(b - a == n / k || b - a == n / k + 1, "k=%d t=%d: %lld nodes", k, t, (long long)(b - a));
            prev = b;
        }
        CHECK_EQ_I(prev, n);
    }
    tire_params p;
    CHECK(tire_params_init(&p, 10, 0.01, 0.3, 0.2, 9.81) != 0, "10 masses accepted");
    CHECK(tire_params_init(&p, 0, 0.01, 0.3, 0.2, 9.81) != 0, "0 masses accepted");
}

/* At t = 0 every node is in equilibrium (prestress balanced), so the first step
 * changes only the vertical velocity: by -g dt up to rounding. */
static void test_prestress_balanced(void)
{
    tire_params p;
    tire_state st;
    tire_params_init(&p, 400, 0.01, 0.3, 0.5, 9.81);
    tire_state_init(&st, &p);
    tire_fast_part(&st, 0, 400, false, NULL);
    st.step++;
    const tire_soa *s = tire_cur(&st);
    for (int i = 0; i < 400; i++) {
        CHECK(fabs(s->vx[i]) < 1e-9, "node %d: vx %g", i, s->vx[i]);
        CHECK(fabs(s->vy[i] + 9.81 * 0.01) < 1e-9, "node %d: vy %g", i, s->vy[i]);
    }
    tire_state_free(&st);
}

int main(void)
{
    test_free_fall();
    test_prestress_balanced();
    test_ranges();
    test_determinism();
    test_stability();
    return check_done();
}
