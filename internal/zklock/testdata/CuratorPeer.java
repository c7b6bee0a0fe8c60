// CuratorPeer is the Java side of the interoperability tests: Apache
// Curator's own recipes, from Debian's libcurator-recipes-java, on the same
// paths as the Go recipes.
//
//   java CuratorPeer <connect> mutex <lockPath> <counterPath> <iterations>
//       InterProcessMutex on lockPath; while holding: print the participant
//       nodes, read the counter, sleep, write it plus one.
//   java CuratorPeer <connect> latch <latchPath> <id>
//       LeaderLatch; prints "leader" / "notleader"; closes when stdin ends.
//   java CuratorPeer <connect> rwlock <lockPath> <counterPath> <iterations>
//       InterProcessReadWriteLock: every third round reads the counter twice
//       under the read lock (prints "torn a b" if it changed meanwhile), the
//       other rounds add one under the write lock; prints "writes N".
//   java CuratorPeer <connect> semaphore <semPath> <countPath> <insidePath> <iterations>
//       InterProcessSemaphoreV2 whose leases are the SharedCount at countPath
//       (prints "max N" once read); while holding a lease: an ephemeral
//       node under insidePath, then "over n max" if more holders than leases
//       are inside.
//   java CuratorPeer <connect> selector <leaderPath> <markerPath> <terms> <id>
//       LeaderSelector (requeued): each term creates the ephemeral markerPath
//       ("overlap" if it exists: another leader), logs the term as a sequential
//       node under markerPath + "-log" with the id as data, deletes the marker.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

import org.apache.curator.framework.api.ACLProvider;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorPeer {
    public static void main(String[] args) throws Exception {
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder().connectString(args[0])
                .sessionTimeoutMs(10000).connectionTimeoutMs(10000).retryPolicy(new ExponentialBackoffRetry(100, 10));
        // ZK_DIGEST=user:password: authenticate as that digest identity and
        // create every node with the shop's ACL (the identity ALL, anyone READ).
        String digest = System.getenv("ZK_DIGEST");
        if (digest != null && !digest.isEmpty()) {
            String user = digest.substring(0, digest.indexOf(':'));
            String hash = Base64.getEncoder().encodeToString(
                    MessageDigest.getInstance("SHA1").digest(digest.getBytes(StandardCharsets.UTF_8)));
            // A mutable list: ZooKeeper asks it contains(null), which List.of refuses.
            List<ACL> acl = new ArrayList<>(Arrays.asList(new ACL(ZooDefs.Perms.ALL, new Id("digest", user + ":" + hash)),
                    new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE)));
            builder = builder.authorization("digest", digest.getBytes(StandardCharsets.UTF_8)).aclProvider(new ACLProvider() {
                @Override
                public List<ACL> getDefaultAcl() {
                    return acl;
                }

                @Override
                public List<ACL> getAclForPath(String path) {
                    return acl;
                }
            });
        }
        CuratorFramework client = builder.build();
        client.start();
        client.blockUntilConnected();
        try {
            switch (args[1]) {
                case "mutex":
                    mutex(client, args[2], args[3], Integer.parseInt(args[4]));
                    break;
                case "latch":
                    latch(client, args[2], args[3]);
                    break;
                case "rwlock":
                    rwlock(client, args[2], args[3], Integer.parseInt(args[4]));
                    break;
                case "semaphore":
                    semaphore(client, args[2], args[3], args[4], Integer.parseInt(args[5]));
                    break;
                case "selector":
                    selector(client, args[2], args[3], Integer.parseInt(args[4]), args[5]);
                    break;
                default:
                    throw new IllegalArgumentException("unknown mode " + args[1]);
            }
        } finally {
            client.close();
        }
    }

    static void mutex(CuratorFramework client, String lockPath, String counterPath, int iterations) throws Exception {
        InterProcessMutex mutex = new InterProcessMutex(client, lockPath);
        for (int i = 0; i < iterations; i++) {
            mutex.acquire();
            try {
                System.out.println("participants " + String.join(",", mutex.getParticipantNodes()));
                int value = Integer.parseInt(new String(client.getData().forPath(counterPath), StandardCharsets.UTF_8));
                Thread.sleep(2);
                client.setData().forPath(counterPath, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
            } finally {
                mutex.release();
            }
        }
        System.out.println("done");
    }

    static int readCounter(CuratorFramework client, String counterPath) throws Exception {
        return Integer.parseInt(new String(client.getData().forPath(counterPath), StandardCharsets.UTF_8));
    }

    static void rwlock(CuratorFramework client, String lockPath, String counterPath, int iterations) throws Exception {
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, lockPath);
        System.out.println("started");
        int writes = 0;
        for (int i = 0; i < iterations; i++) {
            if (i % 3 == 2) {
                rw.readLock().acquire();
                try {
                    int a = readCounter(client, counterPath);
                    Thread.sleep(2);
                    int b = readCounter(client, counterPath);
                    if (a != b) {
                        System.out.println("torn " + a + " " + b);
                    }
                } finally {
                    rw.readLock().release();
                }
            } else {
                rw.writeLock().acquire();
                try {
                    int value = readCounter(client, counterPath);
                    Thread.sleep(2);
                    client.setData().forPath(counterPath, Integer.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                    writes++;
                } finally {
                    rw.writeLock().release();
                }
            }
        }
        System.out.println("writes " + writes);
    }

    static void semaphore(CuratorFramework client, String semPath, String countPath, String insidePath, int iterations) throws Exception {
        SharedCount count = new SharedCount(client, countPath, 0);
        count.start();
        try {
            System.out.println("max " + count.getCount());
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, semPath, count);
            for (int i = 0; i < iterations; i++) {
                Lease lease = sem.acquire();
                try {
                    String me = client.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(insidePath + "/in-");
                    int inside = client.getChildren().forPath(insidePath).size();
                    if (inside > count.getCount()) {
                        System.out.println("over " + inside + " " + count.getCount());
                    }
                    Thread.sleep(3);
                    client.delete().forPath(me);
                } finally {
                    sem.returnLease(lease);
                }
            }
        } finally {
            count.close();
        }
        System.out.println("done");
    }

    static void selector(CuratorFramework client, String leaderPath, String markerPath, int terms, String id) throws Exception {
        AtomicInteger done = new AtomicInteger();
        CountDownLatch finished = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(client, leaderPath, new LeaderSelectorListenerAdapter() {
            public void takeLeadership(CuratorFramework c) throws Exception {
                try {
                    c.create().withMode(CreateMode.EPHEMERAL).forPath(markerPath);
                } catch (KeeperException.NodeExistsException e) {
                    System.out.println("overlap");
                    return;
                }
                c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath(markerPath + "-log/t-", id.getBytes(StandardCharsets.UTF_8));
                Thread.sleep(5);
                c.delete().forPath(markerPath);
                if (done.incrementAndGet() >= terms) {
                    finished.countDown();
                }
            }
        });
        selector.setId(id);
        selector.autoRequeue();
        selector.start();
        System.out.println("started");
        finished.await();
        selector.close();
        System.out.println("terms " + done.get());
    }

    static void latch(CuratorFramework client, String latchPath, String id) throws Exception {
        LeaderLatch latch = new LeaderLatch(client, latchPath, id);
        latch.addListener(new LeaderLatchListener() {
            public void isLeader() { System.out.println("leader"); }
            public void notLeader() { System.out.println("notleader"); }
        });
        latch.start();
        System.out.println("started");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            // run until stdin closes
        }
        latch.close();
        System.out.println("closed");
    }
}
