/* registry: the one list of engine tests, in --list order. Adding a test is its
 * file in tests/ (exporting `const rtg_test rtg_test_ID`), that file in
 * src/meson.build, and one X(ID) line here; ID is the C name (the test's
 * command-line name may have '-' where ID has '_'). Users define X before
 * including this file, e.g. to declare every descriptor or to build the table. */
X(latency)
X(overhead)
X(spin)
X(pi)
X(mut_arc)
X(thr_new)
X(thr_rr)
X(sem_lck)
X(sem_rel)
X(hartstone)
X(switch)
X(preempt)
X(shuffle)
X(message)
X(sem)
X(mutex)
X(thread)
X(tick)
X(deadlock_break)
X(tire)
X(hil)
