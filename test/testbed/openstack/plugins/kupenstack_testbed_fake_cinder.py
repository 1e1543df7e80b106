"""KupenStack test bed only: a cinder volume driver without storage.

cinder's own FakeLoggingVolumeDriver (shipped in python3-cinder as
cinder.tests.fake_driver) plus no-op image copies and extends, so that
"volume create --image" and nova boot-from-volume reach available / ACTIVE.
Volumes hold no data.  cinder.conf: volume_driver =
kupenstack_testbed_fake_cinder.FakeVolumeDriver (on cinder-volume's PYTHONPATH).
"""
from cinder.tests import fake_driver
from cinder.volume import volume_utils


class FakeVolumeDriver(fake_driver.FakeLoggingVolumeDriver):

    @volume_utils.trace_method
    def copy_image_to_volume(self, context, volume, image_service, image_id,
                             *args, **kwargs):
        pass

    @volume_utils.trace_method
    def copy_image_to_encrypted_volume(self, context, volume, image_service,
                                       image_id, *args, **kwargs):
        pass

    @volume_utils.trace_method
    def extend_volume(self, volume, new_size):
        # Volumes hold no data: growing one is only Cinder's bookkeeping,
        # so the kind's os-extend path can be tested to its real end.
        pass
