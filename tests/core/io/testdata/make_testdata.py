#!/usr/bin/python3
# Regenerates the oracle files of npy_test/sample_set_test with Debian's numpy
# and onnx (python3-numpy, python3-onnx): run /usr/bin/python3 make_testdata.py
# here. The tests check the values these arrays were built from, and that our
# writer reproduces numpy.save's bytes (write_*.npy).
import numpy as np
from onnx import numpy_helper

np.save('f4_2x3.npy', (np.arange(6, dtype='<f4') * 0.5).reshape(2, 3))
np.save('f8_be.npy', np.array([1.5, -2.25, 3e10], dtype='>f8'))
np.save('i8_fortran_2x3x4.npy', np.asfortranarray(np.arange(24, dtype='<i8').reshape(2, 3, 4)))
np.save('i2_be_fortran_2x3.npy', np.asfortranarray(np.array([[1, -2, 300], [-400, 5, 32767]], dtype='>i2')))
np.save('u1.npy', np.array([0, 7, 255], dtype=np.uint8))
np.save('i1.npy', np.array([-128, 0, 127], dtype=np.int8))
np.save('bool.npy', np.array([True, False, True]))
np.save('u2_be.npy', np.array([1, 65535], dtype='>u2'))
np.save('u4.npy', np.array([4000000000], dtype='<u4'))
np.save('u8.npy', np.array([18446744073709551615], dtype='<u8'))
np.save('i4_be.npy', np.array([-5, 123456789], dtype='>i4'))
np.save('f2.npy', np.array([1.0, -0.5, 65504.0], dtype='<f2'))
np.save('scalar_f4.npy', np.array(3.5, dtype=np.float32))
np.save('empty_0x3.npy', np.zeros((0, 3), dtype=np.float32))
for v in [(2, 0), (3, 0)]:
    with open(f'f4_v{v[0]}.npy', 'wb') as f:
        np.lib.format.write_array(f, np.array([[1.0, 2.0]], dtype=np.float32), version=v)
open('tensor_f4_2x2.pb', 'wb').write(
    numpy_helper.from_array(np.array([[1, 2], [3, 4]], dtype=np.float32), 'x').SerializeToString())
open('tensor_i64_3.pb', 'wb').write(
    numpy_helper.from_array(np.array([-1, 0, 9], dtype=np.int64), 'idx').SerializeToString())
np.save('write_f4_2x3.npy', (np.arange(6, dtype='<f4') * 0.5).reshape(2, 3))
np.save('write_i8_5.npy', np.arange(5, dtype='<i8') - 2)
np.save('write_f8_scalar.npy', np.array(-1.25))
np.save('write_bool_3.npy', np.array([True, False, True]))
np.save('write_u1_big.npy', np.zeros((1, 123456789012 % 7 + 3), dtype=np.uint8))
