package locklab;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson's RLock, unchanged, against the Redis URL given as the only
 * argument. Prints one line per observation, with no timings or ids in them,
 * so that the transcript against redis-server and against locklab
 * sim-server can be compared line for line.
 *
 * What it exercises: lock() (the hash-based reentrant lock script),
 * tryLock with a wait (the waiter SUBSCRIBEs to redisson_lock__channel:{name}
 * and is woken by the PUBLISH in the unlock script), unlock, and the
 * watchdog: a lock taken without a lease is renewed by pexpire every
 * lockWatchdogTimeout / 3, so it outlives the watchdog timeout while held.
 */
public final class RLockCheck {
    public static void main(String[] args) throws Exception {
        String url = args[0].replaceFirst("/\\d*$", "");
        Config config = new Config();
        config.setLockWatchdogTimeout(1500);
        config.useSingleServer().setAddress(url).setConnectionMinimumIdleSize(2).setConnectionPoolSize(4);
        RedissonClient a = Redisson.create(config);
        RedissonClient b = Redisson.create(config);
        try {
            a.getKeys().delete("locklab:rlock");
            RLock lockA = a.getLock("locklab:rlock");
            RLock lockB = b.getLock("locklab:rlock");

            lockA.lock();
            System.out.println("A locked: " + lockA.isLocked() + " held by A: " + lockA.isHeldByCurrentThread());
            lockA.lock();
            System.out.println("A reentered: hold count " + lockA.getHoldCount());
            lockA.unlock();
            System.out.println("A unlocked once: still locked " + lockA.isLocked());

            System.out.println("B tryLock(0): " + lockB.tryLock(0, TimeUnit.MILLISECONDS));

            // The watchdog: held past its timeout, the lock is still there.
            Thread.sleep(3500);
            long ttl = a.getKeys().remainTimeToLive("locklab:rlock");
            System.out.println("after 3.5 s (watchdog 1.5 s): locked " + lockA.isLocked() + ", ttl renewed " + (ttl > 0));

            // A waiter woken by unlock's PUBLISH.
            CountDownLatch waiting = new CountDownLatch(1);
            boolean[] got = new boolean[1];
            Thread waiter = new Thread(() -> {
                try {
                    waiting.countDown();
                    got[0] = lockB.tryLock(20, 10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            waiter.start();
            waiting.await();
            Thread.sleep(500);
            lockA.unlock();
            System.out.println("A unlocked: waiter may go");
            waiter.join(15000);
            System.out.println("B got the lock after the wait: " + got[0]);
            System.out.println("A sees it locked by someone else: " + (lockA.isLocked() && !lockA.isHeldByCurrentThread()));
            try {
                lockA.unlock();
                System.out.println("A unlocked B's lock (wrong)");
            } catch (IllegalMonitorStateException e) {
                System.out.println("A may not unlock B's lock: IllegalMonitorStateException");
            }
            System.out.println("B unlock forced: " + lockB.forceUnlock());
            System.out.println("locked at the end: " + lockA.isLocked());
        } finally {
            a.shutdown();
            b.shutdown();
        }
    }
}
