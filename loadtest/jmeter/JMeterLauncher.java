// JMeterLauncher runs Debian's JMeter 2.13 in non-GUI mode. That JMeter
// predates XStream's security framework, and the XStream Debian ships with
// it (1.4.20) refuses every class of a test plan
// (ForbiddenClassException: org.apache.jmeter.save.ScriptWrapper). This
// launcher grants JMeter's own XStream instances the permissions JMeter
// assumed, then starts JMeter as its command line would. Newer JMeters do
// not need it.
//
//   javac -cp "$JMETER_CP" -d out/jmeter-launcher loadtest/jmeter/JMeterLauncher.java
//   java -cp "out/jmeter-launcher:$JMETER_CP" -Djmeter.home=/usr/share/jmeter JMeterLauncher -n -t plan.jmx ...
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

import com.thoughtworks.xstream.XStream;
import com.thoughtworks.xstream.security.AnyTypePermission;

public class JMeterLauncher {
    public static void main(String[] args) throws Exception {
        // SaveService reads its configuration from JMeter's properties as it loads.
        String home = System.getProperty("jmeter.home", "/usr/share/jmeter");
        org.apache.jmeter.util.JMeterUtils.setJMeterHome(home);
        org.apache.jmeter.util.JMeterUtils.loadJMeterProperties(home + "/bin/jmeter.properties");
        Class<?> saveService = Class.forName("org.apache.jmeter.save.SaveService");
        int granted = 0;
        for (Field f : saveService.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && XStream.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                ((XStream) f.get(null)).addPermission(AnyTypePermission.ANY);
                granted++;
            }
        }
        if (granted == 0) {
            throw new IllegalStateException("no XStream found in SaveService: is this JMeter 2.13?");
        }
        new org.apache.jmeter.JMeter().start(args);
    }
}
