// CuratorPeer is the Java side of the interoperability tests: Apache
// Curator's own recipes, from Debian's libcurator-recipes-java, on the same
// paths as the Go recipes.
//
//   java CuratorPeer <connect> mutex <lockPath> <counterPath> <iterations>
//       InterProcessMutex on lockPath; while holding: print the participant
//       nodes, read the counter, sleep, write it plus one.
//   java CuratorPeer <connect> latch <latchPath> <id>
//       LeaderLatch; prints "leader" / "notleader"; closes when stdin ends.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                args[0], 10000, 10000, new ExponentialBackoffRetry(100, 10));
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
