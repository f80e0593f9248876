"""The test S3 server takes writes in as many buckets as the whole suite makes, however full the disk is: each
bucket is a SeaweedFS collection with volumes of its own, and a server left to size its volumes by the free disk ran
out of writable volumes after about twenty buckets on a machine with 19 GB free."""

import s3server


def test_sixty_buckets_each_take_a_write(tmp_path):
    server = s3server.start()
    try:
        client = server.client()
        for i in range(60):
            bucket = server.make_bucket(f"many-{i}")
            client.put_object(Bucket=bucket, Key="k", Body=b"x" * 1024)
            assert client.get_object(Bucket=bucket, Key="k")["Body"].read() == b"x" * 1024
    finally:
        server.stop()
