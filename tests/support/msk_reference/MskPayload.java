// AWS's reference AWS_MSK_IAM signer (software.amazon.msk:aws-msk-iam-auth) run
// with fixed inputs, for tests/unit/test_msk_iam_reference.py.
//
// Usage: java -cp <lib/*>:<classes> MskPayload HOST ACCESS_KEY SECRET_KEY TOKEN|- EPOCH_SECONDS USER_AGENT
//
// Prints two lines on stdout:
//   1. the payload the library builds with its clock fixed at EPOCH_SECONDS;
//   2. the payload of the library's public entry point, untouched (real clock),
//      so the test can check that line 1 took the library's own path (same keys).
//
// The library has no clock parameter: AWS4SignedPayloadGenerator.signedPayload()
// presigns with Aws4PresignerParams whose expiry is Instant.now() + 15 min and
// whose signing clock is the system's. So this program calls the generator's own
// private steps by reflection -- createRequestForSigning (the GET request for
// kafka-cluster:Connect), createSigningParams (credentials, region, service) and
// toPayloadBytes (the JSON) -- and changes only the clock: the SDK signer's
// signingClockOverride and the matching expirationTime. Nothing of the payload is
// written here; if the library renames those steps, this fails loudly.
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.signer.Aws4Signer;
import software.amazon.awssdk.auth.signer.params.Aws4PresignerParams;
import software.amazon.awssdk.http.SdkHttpFullRequest;
import software.amazon.msk.auth.iam.internals.AWS4SignedPayloadGenerator;
import software.amazon.msk.auth.iam.internals.AuthenticationRequestParams;

public final class MskPayload {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: MskPayload HOST ACCESS_KEY SECRET_KEY TOKEN|- EPOCH_SECONDS USER_AGENT");
            System.exit(2);
        }
        String host = args[0];
        AwsCredentials credentials = "-".equals(args[3])
                ? AwsBasicCredentials.create(args[1], args[2])
                : AwsSessionCredentials.create(args[1], args[2], args[3]);
        Instant now = Instant.ofEpochSecond(Long.parseLong(args[4]));
        String userAgent = args[5];

        // The region comes from the host name, as the library does for MSK brokers.
        AuthenticationRequestParams params = AuthenticationRequestParams.create(host, credentials, userAgent);
        AWS4SignedPayloadGenerator generator = new AWS4SignedPayloadGenerator();

        Method createRequest = step("createRequestForSigning", AuthenticationRequestParams.class);
        Method createSigning = step("createSigningParams", AuthenticationRequestParams.class);
        Method toPayload = step("toPayloadBytes", SdkHttpFullRequest.class, AuthenticationRequestParams.class);

        SdkHttpFullRequest request = (SdkHttpFullRequest) createRequest.invoke(generator, params);
        Aws4PresignerParams signing = ((Aws4PresignerParams) createSigning.invoke(generator, params)).toBuilder()
                .signingClockOverride(Clock.fixed(now, ZoneOffset.UTC))
                .expirationTime(now.plus(15, ChronoUnit.MINUTES))  // the library's EXPIRY_DURATION_MINUTES
                .build();
        SdkHttpFullRequest signed = Aws4Signer.create().presign(request, signing);
        byte[] fixed = (byte[]) toPayload.invoke(generator, signed, params);
        byte[] live = generator.signedPayload(params);

        System.out.println(new String(fixed, StandardCharsets.UTF_8));
        System.out.println(new String(live, StandardCharsets.UTF_8));
    }

    private static Method step(String name, Class<?>... types) throws NoSuchMethodException {
        Method method = AWS4SignedPayloadGenerator.class.getDeclaredMethod(name, types);
        method.setAccessible(true);
        return method;
    }
}
